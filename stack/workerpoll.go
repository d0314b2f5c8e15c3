package stack

import (
	"errors"
	"io"
	"net"

	"github.com/ustack-dev/ustack/capability"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// Reading on the worker. A connection handed over with PollOnWorker is
// read by the queue's worker itself, right after the TCP processing that
// queued its data and before the worker yields to the goroutines that
// processing woke: a protocol engine over the stream (the queue-pair
// engine of package qp) then runs with no goroutine hand-off per message.
// The connection's readable event puts it on the endpoint's ready list
// (package link), where a worker reads it.

// maxPollReads is how many reads one turn on the worker makes of a
// connection before it goes to the back of the ready list, so that one
// busy stream does not starve the others or the RX ring (a read takes
// everything queued then).
const maxPollReads = 4

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
	p := &pollState{w: pollWriter{consume: consume, queued: &c.s.pollQueued}, consumed: consumed, done: done}
	p.Init(c.s.ep.Ready(), func() { c.pollRead(p) }, waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr)
	c.poll.Store(p)
	c.wq.EventRegister(p.Entry())
	if !c.s.cfg.Debug.NoFastPath {
		p.fast.Take = func(b []byte) bool { return c.placeDirect(p, b) }
		p.fast.Taken = func(b []byte, d gstack.Deferrer) { c.placedDirect(p, d) }
		p.fast.Left = &c.s.pollLeft
		c.ep.SetFastConsumer(&p.fast)
		// The owned fast path may carry the connection from now on.
		c.ownReg.Store(true)
		c.s.ep.RegisterOwner(c.ep, (*connOwner)(c))
		if c.closed.Load() {
			// A Close that came meanwhile may have looked at ownReg
			// before it was set.
			c.s.ep.UnregisterOwner(c.ep)
		}
	}
	// Whatever arrived before the registration fired no event.
	p.Push()
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
	if p.Ended() || !c.readMu.TryLock() {
		return false
	}
	if t := c.s.ep.Trace(); t != nil {
		t.Read()
	}
	c.s.pollDirect.Add(uint64(len(b)))
	p.w.consume(b)
	return true
}

// placedDirect (FastConsumer.Taken) calls consumed for the bytes
// placeDirect handed over, with the connection unlocked, so that what
// the engine answers (a Read Response, an OnInput handler's post) goes
// out before netstack processes the ACK the segment carried, as a
// handler's reply does (Stream.runDirect): for a segment alone in its RX
// batch the worker kicks it right here.
func (c *tcpConn) placedDirect(p *pollState, d gstack.Deferrer) {
	woke := !p.Ended() && p.consumed()
	c.readMu.Unlock()
	if woke {
		c.s.ep.SetWoke()
	}
	c.s.ep.FlushIfSolo(d)
}

// pollRead reads what the connection has queued and hands it to the
// consumer; on a worker, from the ready list.
func (c *tcpConn) pollRead(p *pollState) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for i := 0; !p.Ended(); i++ {
		if i == maxPollReads {
			p.Push()
			return
		}
		n, err := c.ep.ReadCount(&p.w, tcpip.ReadOptions{})
		if n > 0 {
			if t := c.s.ep.Trace(); t != nil {
				t.Read()
			}
			if p.consumed() {
				c.s.ep.SetWoke()
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

// WorkerPoller is capability.WorkerPoller, which ustack's TCP
// connections implement with PollOnWorker: the connection's reading
// moves onto the worker. For a whole application on the worker, see
// Handler.
type WorkerPoller = capability.WorkerPoller

// TryWriter is capability.TryWriter, which ustack's TCP connections
// implement with TryWrite: a Write that never waits, for code running on
// the worker.
type TryWriter = capability.TryWriter

var (
	_ WorkerPoller = (*tcpConn)(nil)
	_ TryWriter    = (*tcpConn)(nil)
)
