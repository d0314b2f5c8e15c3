package stack

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// Reading on the worker. A connection handed over with PollOnWorker is
// read by the queue's worker itself, right after the TCP processing that
// queued its data and before the worker yields to the goroutines that
// processing woke: a protocol engine over the stream (the queue-pair
// engine of package qp) then runs with no goroutine hand-off per message.
//
// The connection's readable event (fired by netstack under the
// endpoint's lock, on whatever goroutine processed the segment) only puts
// the connection on the endpoint's ready list; a worker reads it once
// the locks are released. A worker blocked in Wait is interrupted for it.

// maxPollReads is how many reads one turn on the worker makes of a
// connection before it goes to the back of the ready list, so that one
// busy stream does not starve the others or the RX ring (a read takes
// everything queued then).
const maxPollReads = 4

var errPolled = errors.New("connection is read by the worker (PollOnWorker)")

// pollState is a worker-read connection's place on the ready list (or a
// handler listener's, or a handler's stream's: run says what the worker
// does with it).
type pollState struct {
	ready    *readyList
	run      func() // the worker's turn; it clears queued first
	c        *tcpConn
	w        pollWriter
	consumed func() (woke bool)
	done     func(error)
	entry    waiter.Entry
	queued   atomic.Bool      // on the ready list
	ended    atomic.Bool      // done called (or on its way)
	fast     tcp.FastConsumer // the fast path's consumer, if set
}

// init sets p up to be pushed to ready, and run there, on the events of
// mask (p.entry, for the caller to register).
func (p *pollState) init(ready *readyList, run func(), mask waiter.EventMask) {
	p.ready, p.run = ready, run
	p.entry.Init(p, mask)
}

// push queues p for a worker.
func (p *pollState) push() { p.ready.push(p) }

// pollWriter hands netstack's buffers to the consumer as they are read:
// no copy in between.
type pollWriter struct{ consume func([]byte) }

// Write implements io.Writer for netstack's ReadCount.
func (w *pollWriter) Write(b []byte) (int, error) {
	w.consume(b)
	return len(b), nil
}

// NotifyEvent implements waiter.EventListener: the connection became
// readable (or hung up, or failed).
func (p *pollState) NotifyEvent(waiter.EventMask) { p.ready.push(p) }

// readyList is the endpoint's worker-read connections with something to
// read.
type readyList struct {
	n     atomic.Int32 // len(list), read by the workers without the lock
	mu    sync.Mutex
	list  []*pollState
	spare []*pollState
	ep    *endpoint
}

// push queues p for a worker, unless it is queued already or ended.
func (r *readyList) push(p *pollState) {
	if p.ended.Load() || !p.queued.CompareAndSwap(false, true) {
		return
	}
	r.mu.Lock()
	r.list = append(r.list, p)
	r.n.Add(1)
	r.mu.Unlock()
	r.ep.wakeForReady()
}

// drain reads every queued connection; called by workers only.
func (r *readyList) drain() {
	r.mu.Lock()
	list := r.list
	r.list, r.spare = r.spare, nil
	r.n.Store(0)
	r.mu.Unlock()
	for i, p := range list {
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
func (e *endpoint) wakeForReady() {
	for _, q := range e.queues {
		if q.workerAwake() {
			return
		}
	}
	if len(e.queues) > 0 {
		e.queues[0].io.Interrupt()
	}
}

// PollOnWorker hands the connection's reading to ustack's worker: from
// now on, whenever data arrives, the worker reads it, right after the TCP
// processing of the batch that brought it, and calls consume with the
// bytes, in order, straight from netstack's buffers (b is valid only
// during the call, and one read may make several calls), then consumed
// once. When the stream ends, done is called once, on a goroutine of its
// own, with io.EOF after the peer's orderly close, net.ErrClosed after
// Close, or the connection's error; neither consume nor consumed is
// called after that. consumed reports whether it may have readied a
// goroutine (sent on a channel one may be waiting on): the worker then
// yields its P after the batch, so that goroutine runs at once; if it
// readied none, the worker goes on polling without the yield, which on a
// process with idle Ps costs a thread wake-up.
//
// Both run on the worker and must not block, and should be quick, since
// every connection of the queue waits for them. consume runs with the
// connection locked: it must not call the connection at all. consumed
// runs with it unlocked and may write with TryWrite. Read must not be
// called on the connection afterwards: it fails. It is what package qp
// uses to run a queue pair's engine on the worker.
func (c *tcpConn) PollOnWorker(consume func(b []byte), consumed func() (woke bool), done func(error)) error {
	if consume == nil || consumed == nil || done == nil {
		return errors.New("ustack: PollOnWorker needs consume, consumed and done")
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.closed.Load() {
		return c.opError("read", net.ErrClosed)
	}
	if c.poll.Load() != nil {
		return c.opError("read", errPolled)
	}
	p := &pollState{c: c, w: pollWriter{consume: consume}, consumed: consumed, done: done}
	p.init(&c.s.ep.ready, func() { c.pollRead(p) }, waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr)
	c.poll.Store(p)
	c.wq.EventRegister(&p.entry)
	if !c.s.cfg.NoFastPath {
		p.fast.Take = func(b []byte) bool { return c.placeDirect(p, b) }
		p.fast.Taken = func(b []byte, d gstack.Deferrer) { c.placedDirect(p, d) }
		p.fast.Left = &c.s.pollLeft
		c.ep.SetFastConsumer(&p.fast)
	}
	// Whatever arrived before the registration fired no event.
	c.s.ep.ready.push(p)
	return nil
}

// placeDirect is the fast path's consumer (netstack's FastConsumer.Take)
// for a worker-read connection: the bytes of an in-order segment go to
// consume straight from the receive frame, while nothing waits in the
// receive queue, so that a queue pair's engine places them into
// registered memory with one copy (the frame's), not two (the frame's
// into netstack's buffer, then that buffer's), unless another worker is
// reading the connection. It keeps the read lock for placedDirect.
// Called with the connection locked.
func (c *tcpConn) placeDirect(p *pollState, b []byte) bool {
	if p.ended.Load() || !c.readMu.TryLock() {
		return false
	}
	if t := c.s.ep.trace; t != nil {
		t.read()
	}
	p.w.consume(b)
	c.s.pollDirect.Add(uint64(len(b)))
	return true
}

// placedDirect (FastConsumer.Taken) calls consumed for the bytes
// placeDirect handed over, with the connection unlocked, so that what
// the engine answers (a Read Response, an OnInput handler's post) goes
// out before netstack processes the ACK the segment carried, as a
// handler's reply does (Stream.runDirect): for a segment alone in its RX
// batch the worker kicks it right here.
func (c *tcpConn) placedDirect(p *pollState, d gstack.Deferrer) {
	woke := !p.ended.Load() && p.consumed()
	c.readMu.Unlock()
	if woke {
		c.s.ep.setWoke()
	}
	if dq, ok := d.(*deferred); ok && dq.solo {
		for _, q := range c.s.ep.queues {
			q.flushTx()
		}
	}
}

// pollRead reads what the connection has queued and hands it to the
// consumer; on a worker, from the ready list.
func (c *tcpConn) pollRead(p *pollState) {
	p.queued.Store(false)
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for i := 0; !p.ended.Load(); i++ {
		if i == maxPollReads {
			c.s.ep.ready.push(p)
			return
		}
		n, err := c.ep.ReadCount(&p.w, tcpip.ReadOptions{})
		if n > 0 {
			c.s.pollQueued.Add(uint64(n))
			if t := c.s.ep.trace; t != nil {
				t.read()
			}
			if p.consumed() {
				c.s.ep.setWoke()
			}
		}
		switch err.(type) {
		case nil:
			continue
		case *tcpip.ErrWouldBlock:
			return
		case *tcpip.ErrClosedForReceive:
			if c.closed.Load() {
				c.endPoll(net.ErrClosed)
			} else {
				c.endPoll(io.EOF)
			}
		default:
			if c.closed.Load() {
				c.endPoll(net.ErrClosed)
			} else {
				c.endPoll(c.opError("read", goError(err)))
			}
		}
		return
	}
}

// endPoll ends the worker's reading of the connection, once, and reports
// err to the consumer's done. Not called from within a waiter
// notification (it unregisters).
func (c *tcpConn) endPoll(err error) {
	p := c.poll.Load()
	if p == nil || !p.ended.CompareAndSwap(false, true) {
		return
	}
	c.wq.EventUnregister(&p.entry)
	c.ep.SetFastConsumer(nil)
	go p.done(err)
}

// WorkerPoller is implemented by the net.Conn values ustack's TCP hands
// out (Listen, Dial): the connection's reading moves onto the worker.
// Assert it on a net.Conn to find out whether the connection has it:
//
//	if wp, ok := conn.(stack.WorkerPoller); ok { ... }
//
// PollOnWorker calls consume with the bytes, straight from netstack's
// buffers (or from the receive frame) and with the connection locked,
// right after the TCP processing that brought them, then consumed with it
// unlocked (which may write with TryWrite; it reports whether it readied
// a goroutine; for bytes from the frame it runs before the ACK their
// segment carried is processed, so what it writes goes first); neither
// may block. done is called once, on a goroutine of its own, when the stream
// ends. Read fails afterwards. Package qp runs its engine this way. For a
// whole application on the worker, see Handler.
type WorkerPoller interface {
	PollOnWorker(consume func(b []byte), consumed func() (woke bool), done func(error)) error
}

// TryWriter is implemented by ustack's TCP net.Conn values: TryWrite
// writes what of b the send buffer takes now, without waiting, and
// returns how much that was (0 if another Write holds the connection).
// Code running on the worker (a WorkerPoller's consumed) writes with it.
type TryWriter interface {
	TryWrite(b []byte) (int, error)
}

var (
	_ WorkerPoller = (*tcpConn)(nil)
	_ TryWriter    = (*tcpConn)(nil)
)
