package link

import (
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// wakeNotifier is the channel an application's blocked call waits on,
// which also tells the worker that a notification may have readied a
// goroutine (woke). The worker yields its P after an RX batch only then:
// a yield when nothing is runnable costs a futex wake of an idle P's
// thread, on a small machine the CPU the peer runs on.
type wakeNotifier struct {
	ch chan struct{}
	e  *Endpoint
}

// NotifyEvent implements waiter.EventListener.
func (w wakeNotifier) NotifyEvent(waiter.EventMask) {
	select {
	case w.ch <- struct{}{}:
		w.e.SetWoke()
	default:
	}
}

// NewWakeEntry is waiter.NewChannelEntry whose notifications also tell
// the workers that a goroutine may have been readied (wakeNotifier): what
// an application's blocked call waits on.
func (e *Endpoint) NewWakeEntry(mask waiter.EventMask) (waiter.Entry, chan struct{}) {
	ch := make(chan struct{}, 1)
	var entry waiter.Entry
	entry.Init(wakeNotifier{ch: ch, e: e}, mask)
	return entry, ch
}

// SetWoke tells every worker that a goroutine may have been readied on
// its P.
func (e *Endpoint) SetWoke() {
	for _, q := range e.queues {
		q.noteWoke()
	}
}
