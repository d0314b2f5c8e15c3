// Copyright 2018 The gVisor Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package tcp

import (
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

type timerState int

const (
	// The timer has not been initialized yet or has been cleaned up.
	timerUninitialized timerState = iota
	// The timer is disabled.
	timerStateDisabled
	// The timer is enabled, but the clock timer may be set to an earlier
	// expiration time due to a previous orphaned state.
	timerStateEnabled
	// The timer is disabled, but the clock timer is enabled, which means that
	// it will cause a spurious wakeup unless the timer is enabled before the
	// clock timer fires.
	timerStateOrphaned
)

// timer is a timer implementation that reduces the interactions with the
// clock timer infrastructure by letting timers run (and potentially
// eventually expire) even if they are stopped. It makes it cheaper to
// disable/reenable timers at the expense of spurious wakes. This is useful for
// cases when the same timer is disabled/reenabled repeatedly with relatively
// long timeouts farther into the future.
//
// TCP retransmit timers benefit from this because they the timeouts are long
// (currently at least 200ms), and get disabled when acks are received, and
// reenabled when new pending segments are sent.
//
// It is advantageous to avoid interacting with the clock because it acquires
// a global mutex and performs O(log n) operations, where n is the global number
// of timers, whenever a timer is enabled or disabled, and may make a syscall.
//
// This struct is thread-compatible.
type timer struct {
	state timerState

	// ep is the endpoint whose handler runs, under its lock, when the
	// timer expires; its stack's clock is the timer's (ustack, patch
	// 0091: where a clock and a closure made for every timer were).
	ep *Endpoint

	// target is the expiration time of the current timer. It is only
	// meaningful in the enabled state.
	target tcpip.MonotonicTime

	// clockTarget is the expiration time of the clock timer. It is
	// meaningful in the enabled and orphaned states.
	clockTarget tcpip.MonotonicTime

	// timer is the clock timer used to wait on.
	timer tcpip.Timer

	// handler is called with ep when the timer expires, as timerHandler
	// calls its function: a function of no state, so the timer makes no
	// closure until it is first armed (fire), and one that is never
	// armed makes none.
	handler func(*Endpoint) tcpip.Error
}

// init initializes the timer. Once it expires handler will be called
// with ep, under ep's lock (handleTimer).
func (t *timer) init(ep *Endpoint, handler func(*Endpoint) tcpip.Error) {
	t.state = timerStateDisabled
	t.ep = ep
	t.handler = handler
}

// fire is the clock timer's function: the handler, under the lock.
// cleanup leaves ep and handler, so a clock timer that fires after it
// still finds them (the handler then sees the timer uninitialized).
func (t *timer) fire() { handleTimer(t.ep, t.handler) }

// cleanup frees all resources associated with the timer.
func (t *timer) cleanup() {
	if t.timer == nil {
		// No cleanup needed.
		return
	}
	t.timer.Stop()
	// ustack: ep and handler stay, unwritten, for a clock timer that
	// fires after this (fire reads them without the lock). A timer
	// enabled after cleanup (upstream's code never does) is marked
	// enabled but arms no clock timer: it never fires, where upstream
	// would have crashed on its zeroed clock.
	t.state = timerUninitialized
	t.target, t.clockTarget = tcpip.MonotonicTime{}, tcpip.MonotonicTime{}
	t.timer = nil
}

// isUninitialized returns true if the timer is in the uninitialized state. This
// is only true if init() has never been called or if cleanup has been called.
func (t *timer) isUninitialized() bool {
	return t.state == timerUninitialized
}

// checkExpiration checks if the given timer has actually expired, it should be
// called whenever the callback function is called, and is used to check if it's
// a spurious timer expiration (due to a previously orphaned timer) or a
// legitimate one.
func (t *timer) checkExpiration() bool {
	// Transition to fully disabled state if we're just consuming an
	// orphaned timer.
	if t.state == timerStateOrphaned {
		t.state = timerStateDisabled
		return false
	}

	// The timer is enabled, but it may have expired early. Check if that's
	// the case, and if so, reset the runtime timer to the correct time.
	now := t.ep.stack.Clock().NowMonotonic()
	if now.Before(t.target) {
		t.clockTarget = t.target
		t.timer.Reset(t.target.Sub(now))
		return false
	}

	// The timer has actually expired, disable it for now and inform the
	// caller.
	t.state = timerStateDisabled
	return true
}

// disable disables the timer, leaving it in an orphaned state if it wasn't
// already disabled.
func (t *timer) disable() {
	if t.state != timerStateDisabled {
		t.state = timerStateOrphaned
	}
}

// enabled returns true if the timer is currently enabled, false otherwise.
// stop disables the timer and, unlike disable, stops the clock timer too,
// so that a timer armed and cancelled on every round trip (the delayed
// ACK) costs no wakeup when cancelled (ustack).
func (t *timer) stop() {
	if t.state != timerStateEnabled {
		return
	}
	if t.timer != nil && t.timer.Stop() {
		t.state = timerStateDisabled
		return
	}
	t.state = timerStateOrphaned
}

func (t *timer) enabled() bool {
	return t.state == timerStateEnabled
}

// enable enables the timer, programming the runtime timer if necessary.
func (t *timer) enable(d time.Duration) {
	t.enableAt(t.ep.stack.Clock().NowMonotonic(), d)
}

// enableAt is enable for a caller that has just read the clock: now (ustack).
func (t *timer) enableAt(now tcpip.MonotonicTime, d time.Duration) {
	t.target = now.Add(d)

	// Check if we need to set the runtime timer.
	if t.state == timerStateDisabled || t.target.Before(t.clockTarget) {
		t.clockTarget = t.target
		t.resetOrStart(d)
	}

	t.state = timerStateEnabled
}

// resetOrStart creates the timer if it doesn't already exist or resets it with
// the given duration if it does.
func (t *timer) resetOrStart(d time.Duration) {
	if t.timer == nil {
		t.timer = t.ep.stack.Clock().AfterFunc(d, t.fire)
	} else {
		t.timer.Reset(d)
	}
}
