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

type timerState uint8

const (
	// The timer has not been initialized yet or has been cleaned up.
	timerUninitialized timerState = iota
	// The timer is disabled.
	timerStateDisabled
	// The timer is enabled: its handler runs once the endpoint's clock
	// timer fires at or after target.
	timerStateEnabled
)

// timer is one of an endpoint's TCP timers (retransmission, probe,
// reordering, cork, delayed ACK, keepalive).
//
// ustack: an endpoint's timers share one clock timer (the endpoint's
// timerClock), set for the earliest target among them; when it fires,
// timerClockFired runs the handler of each enabled timer that is due,
// earliest first, under the endpoint's lock, and a timer not yet due
// sets the clock for itself again. Upstream gave each timer a clock
// timer of its own: an idle connection kept three of them
// (retransmission, probe and delayed ACK, each armed once), about 150
// bytes each with its closure.
//
// As upstream's, it reduces the interactions with the clock by letting
// the clock timer run (and fire for nothing) when a timer is disabled:
// disabling is cheaper and re-enabling with a later target costs nothing.
// TCP's retransmission timer benefits: its timeouts are long (at least
// 200ms), and it is disabled when acks arrive and enabled again when new
// segments are sent. Interacting with the clock takes a runtime lock and
// performs O(log n) operations on the runtime's timers.
//
// This struct is thread-compatible: it is used under its endpoint's lock.
type timer struct {
	state timerState

	// due is set by timerClockFired for a timer it found due at its
	// reading of the clock, so the handler's checkExpiration need not
	// read it again.
	due bool

	// ep is the endpoint whose handler runs, under its lock, when the
	// timer expires; its stack's clock is the timer's.
	ep *Endpoint

	// target is the expiration time of the current timer. It is only
	// meaningful in the enabled state.
	target tcpip.MonotonicTime

	// handler is called with ep when the timer expires: a function of no
	// state (resendTimerExpired and the like), so a timer holds no
	// closure.
	handler func(*Endpoint) tcpip.Error
}

// init initializes the timer. Once it expires handler will be called
// with ep, under ep's lock (timerClockFired).
func (t *timer) init(ep *Endpoint, handler func(*Endpoint) tcpip.Error) {
	t.state = timerStateDisabled
	t.ep = ep
	t.handler = handler
}

// cleanup disables the timer for good: it is never enabled again (the
// endpoint's cleanup stops the shared clock timer, stopTimerClock).
func (t *timer) cleanup() {
	t.state = timerUninitialized
	t.target = tcpip.MonotonicTime{}
}

// isUninitialized returns true if the timer is in the uninitialized state. This
// is only true if init() has never been called or if cleanup has been called.
func (t *timer) isUninitialized() bool {
	return t.state == timerUninitialized
}

// checkExpiration checks if the given timer has actually expired. It is
// called by the timer's handler, which timerClockFired runs for a timer
// it found due (due: no second reading of the clock); one that is not
// due sets the clock for its target again.
func (t *timer) checkExpiration() bool {
	if t.state != timerStateEnabled {
		return false
	}
	if t.due {
		t.due = false
		t.state = timerStateDisabled
		return true
	}
	now := t.ep.stack.Clock().NowMonotonic()
	if now.Before(t.target) {
		t.ep.armTimerClock(now, t.target)
		return false
	}

	// The timer has actually expired, disable it for now and inform the
	// caller.
	t.state = timerStateDisabled
	return true
}

// disable disables the timer. The clock timer stays set: if no timer is
// due when it fires, it fires for nothing.
func (t *timer) disable() {
	if t.state == timerStateEnabled {
		t.state = timerStateDisabled
	}
}

// enabled returns true if the timer is currently enabled, false otherwise.
func (t *timer) enabled() bool {
	return t.state == timerStateEnabled
}

// enable enables the timer, programming the clock timer if necessary.
func (t *timer) enable(d time.Duration) {
	t.enableAt(t.ep.stack.Clock().NowMonotonic(), d)
}

// enableAt is enable for a caller that has just read the clock: now (ustack).
func (t *timer) enableAt(now tcpip.MonotonicTime, d time.Duration) {
	if t.state == timerUninitialized {
		// Cleaned up (upstream's code never enables such a timer).
		return
	}
	t.target = now.Add(d)
	t.state = timerStateEnabled
	t.ep.armTimerClock(now, t.target)
}

// armTimerClock sets the endpoint's clock timer to fire at target, unless
// it is set to fire at or before it already. now is the caller's reading
// of the clock, which may be a segment's receive time, a batch old: the
// clock then fires that much late (microseconds, against timeouts of a
// millisecond and more), and so may every timer whose target it covers.
// +checklocks:e.mu
func (e *Endpoint) armTimerClock(now, target tcpip.MonotonicTime) {
	if e.timerClockAt != (tcpip.MonotonicTime{}) && !target.Before(e.timerClockAt) {
		return
	}
	e.timerClockAt = target
	d := target.Sub(now)
	if e.timerClock == nil {
		e.timerClock = e.stack.Clock().AfterFunc(d, e.timerClockFired)
		return
	}
	e.timerClock.Reset(d)
}

// stopTimerClock stops the endpoint's clock timer: its timers are
// cleaned up.
// +checklocks:e.mu
func (e *Endpoint) stopTimerClock() {
	if e.timerClock != nil {
		e.timerClock.Stop()
	}
	e.timerClockAt = tcpip.MonotonicTime{}
}

// timerClockFired is the endpoint's clock timer's function. Under the
// endpoint's lock it runs the handler of every enabled timer that is due,
// earliest target first, as the timers' own clock timers queued on the
// lock in that order did: a reordering timeout that retransmits moves
// the retransmission timer's target before that timer's turn comes. A
// timer not yet due sets the clock for its target again. Then, as
// upstream's handler did, the processor is told of segments that waited
// for the lock.
func (e *Endpoint) timerClockFired() {
	e.mu.Lock()
	// ustack: a fast path owns a parked connection; TakeBack arms the
	// timers again (handover.go).
	if e.parked {
		e.timerClockAt = tcpip.MonotonicTime{}
		e.mu.Unlock()
		return
	}
	// ustack: an ACK the fast path left pending before the timers act
	// on what it acknowledges (patch 0084).
	e.runLateAckLocked()
	// The clock has fired: it is set again by the first timer that asks.
	e.timerClockAt = tcpip.MonotonicTime{}
	var all [6]*timer
	timers := append(all[:0], &e.keepalive.timer)
	if s := e.snd; s != nil {
		timers = append(timers, &s.resendTimer, &s.probeTimer, &s.reorderTimer, &s.corkTimer, &s.delackTimer)
	}
	byTarget(timers)
	now := e.stack.Clock().NowMonotonic()
	for _, t := range timers {
		// An earlier handler may have changed it.
		if t.state != timerStateEnabled {
			continue
		}
		if now.Before(t.target) {
			e.armTimerClock(now, t.target)
			continue
		}
		t.due = true
		err := t.handler(e)
		t.due = false
		if err != nil {
			e.timerFailedLocked(err)
			return
		}
	}
	processor := e.protocol.dispatcher.selectProcessor(e.ID)
	e.mu.Unlock()

	// notify processor if there are pending segments to be
	// processed. ustack: unless a link endpoint's goroutine will,
	// after its receive burst (see UnlockUser).
	if !e.segmentQueue.empty() && !e.pendingInline.Load() {
		processor.queueEndpoint(e)
	}
}

// byTarget orders timers by target, earliest first, keeping the order of
// equal ones (an insertion sort: six at most).
func byTarget(timers []*timer) {
	for i := 1; i < len(timers); i++ {
		for j := i; j > 0 && timers[j].target.Before(timers[j-1].target); j-- {
			timers[j], timers[j-1] = timers[j-1], timers[j]
		}
	}
}
