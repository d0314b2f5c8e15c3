package link

import (
	"sync"
	"sync/atomic"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// The ready list: work a worker runs between its RX batches that the
// connection APIs above hand it. A connection read on the worker (stack's
// PollOnWorker), a handler's stream or a handler's listener has a Ready,
// its place on the list: its readable event (fired by netstack under the
// endpoint's lock, on whatever goroutine processed the segment), or an
// application's call, only puts it on the list, and a worker runs its
// turn once the locks are released. A worker blocked in Wait is
// interrupted for it (wakeForReady).

// Ready is one item's place on a ready list.
type Ready struct {
	list   *ReadyList
	run    func() // the item's turn on a worker
	entry  waiter.Entry
	queued atomic.Bool // on the list
	ended  atomic.Bool // never to run again
}

// Init sets r up to be pushed to list, and run there, on the events of
// mask (Entry, for the caller to register).
func (r *Ready) Init(list *ReadyList, run func(), mask waiter.EventMask) {
	r.list, r.run = list, run
	r.entry.Init(r, mask)
}

// Entry is r's waiter entry, for the events Init named.
func (r *Ready) Entry() *waiter.Entry { return &r.entry }

// Push queues r for a worker, unless it is queued already or ended.
func (r *Ready) Push() { r.list.push(r) }

// NotifyEvent implements waiter.EventListener: Push.
func (r *Ready) NotifyEvent(waiter.EventMask) { r.list.push(r) }

// End marks r ended: it is pushed no more. It reports whether r was not
// ended before.
func (r *Ready) End() bool { return r.ended.CompareAndSwap(false, true) }

// Ended reports whether r has ended.
func (r *Ready) Ended() bool { return r.ended.Load() }

// ReadyList is what the endpoint's workers run when they find it readied:
// worker-read connections with something to read, handlers' streams and
// listeners.
type ReadyList struct {
	n     atomic.Int32 // len(list), read by the workers without the lock
	mu    sync.Mutex
	list  []*Ready
	spare []*Ready
	ep    *Endpoint
}

// push queues p for a worker, unless it is queued already or ended.
func (r *ReadyList) push(p *Ready) {
	if p.ended.Load() || !p.queued.CompareAndSwap(false, true) {
		return
	}
	r.mu.Lock()
	r.list = append(r.list, p)
	r.n.Add(1)
	r.mu.Unlock()
	r.ep.wakeForReady()
}

// drain runs every queued item's turn; called by workers only.
func (r *ReadyList) drain() {
	r.mu.Lock()
	list := r.list
	r.list, r.spare = r.spare, nil
	r.n.Store(0)
	r.mu.Unlock()
	for i, p := range list {
		p.queued.Store(false)
		p.run()
		list[i] = nil
	}
	r.mu.Lock()
	if r.spare == nil {
		r.spare = list[:0]
	}
	r.mu.Unlock()
}

// wakeForReady makes sure a worker will drain the ready list: one that is
// awake checks it every loop; if none is, the first is interrupted.
// Paired with a worker's going to sleep (queue.wait): it clears awake
// before it checks the list, a pusher adds to the list before it checks
// awake (sequentially consistent atomics on both sides).
func (e *Endpoint) wakeForReady() {
	for _, q := range e.queues {
		if q.workerAwake() {
			return
		}
	}
	if len(e.queues) > 0 {
		e.queues[0].io.Interrupt()
	}
}
