package stack

import (
	"sync/atomic"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// wakeNotifier is the channel an application's blocked call waits on,
// which also tells the worker that a notification may have readied a
// goroutine (woke). The worker yields its P after an RX batch only then:
// a yield when nothing is runnable costs a futex wake of an idle P's
// thread, on a small machine the CPU the peer runs on.
type wakeNotifier struct {
	ch   chan struct{}
	woke *atomic.Bool
}

// NotifyEvent implements waiter.EventListener.
func (w wakeNotifier) NotifyEvent(waiter.EventMask) {
	select {
	case w.ch <- struct{}{}:
		w.woke.Store(true)
	default:
	}
}

// newWakeEntry is waiter.NewChannelEntry with a wakeNotifier.
func (e *endpoint) newWakeEntry(mask waiter.EventMask) (waiter.Entry, chan struct{}) {
	ch := make(chan struct{}, 1)
	var entry waiter.Entry
	entry.Init(wakeNotifier{ch: ch, woke: &e.woke}, mask)
	return entry, ch
}
