package stack

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
	"github.com/ustack-dev/ustack/stack/internal/link"
	"github.com/ustack-dev/ustack/stack/internal/trace"
)

// tcpConn is a net.Conn over a netstack TCP endpoint. Unlike gonet's, it
// registers its wait entries once for its lifetime and keeps its scratch
// state in the connection, so a Read or Write that finds data or room
// allocates nothing, and one that has to wait allocates nothing either.
// It gives its port back once the connection has finished closing.
type tcpConn struct {
	s    *Stack
	ep   *tcp.Endpoint
	wq   *waiter.Queue
	keys []portKey

	// The addresses are kept as values: a net.Addr is made when asked
	// for, not for every connection (an idle server's memory).
	local, remote netip.AddrPort

	// readMu serializes Reads: they share rbuf, rEntry and rNotify.
	readMu  sync.Mutex
	rbuf    tcpip.SliceWriter
	rEntry  waiter.Entry
	rNotify chan struct{}
	// writeMu serializes Writes: they share wbuf, wEntry and wNotify.
	writeMu sync.Mutex
	wbuf    bytes.Reader
	wEntry  waiter.Entry
	wNotify chan struct{}

	rDeadline, wDeadline lazyDeadline

	// poll is set once the worker reads the connection (PollOnWorker).
	poll atomic.Pointer[pollState]
	// fed: the owned fast path gave the consumer bytes since Begin
	// (connowned.go; under readMu).
	fed bool

	// ownMu guards own, who carries the connection: the owned fast path
	// (a worker-read connection, connowned.go) or netstack (nil). Every
	// write into netstack holds it.
	ownMu sync.Mutex
	own   *link.Owned
	// ownReg: registered with the owned fast path (PollOnWorker); noOwn:
	// never to be carried again (closed or shut down).
	ownReg, noOwn atomic.Bool

	closed    atomic.Bool
	closeOnce sync.Once
}

var errPolled = errors.New("connection is read by the worker (PollOnWorker)")

// pollState is a worker-read connection's consumer (PollOnWorker), with
// its place on the endpoint's ready list (ended once done is called, or
// on its way).
type pollState struct {
	link.Ready
	w        pollWriter
	consumed func() (woke bool)
	done     func(error)
	fast     tcp.FastConsumer // the fast path's consumer, if set
}

// pollWriter hands netstack's buffers to the consumer as they are read:
// no copy in between. It counts them first, so that whoever the consumer
// answers sees them counted.
type pollWriter struct {
	consume func([]byte)
	queued  *atomic.Uint64
}

// Write implements io.Writer for netstack's ReadCount.
func (w *pollWriter) Write(b []byte) (int, error) {
	w.queued.Add(uint64(len(b)))
	w.consume(b)
	return len(b), nil
}

// endPoll ends the worker's reading of the connection, once, and reports
// err to the consumer's done. Not called from within a waiter
// notification (it unregisters).
func (c *tcpConn) endPoll(err error) {
	p := c.poll.Load()
	if p == nil || !p.End() {
		return
	}
	c.wq.EventUnregister(p.Entry())
	c.ep.SetFastConsumer(nil)
	go p.done(err)
}

// newTCPConn wraps ep, which netstack's TCP protocol made (a dialed or an
// accepted endpoint: *tcp.Endpoint is the only TCP endpoint it makes).
func newTCPConn(s *Stack, wq *waiter.Queue, ep tcpip.Endpoint, keys []portKey) *tcpConn {
	c := &tcpConn{s: s, ep: ep.(*tcp.Endpoint), wq: wq, keys: keys}
	c.rEntry, c.rNotify = s.ep.NewWakeEntry(waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr)
	c.wEntry, c.wNotify = s.ep.NewWakeEntry(waiter.WritableEvents | waiter.EventHUp | waiter.EventErr)
	wq.EventRegister(&c.rEntry)
	wq.EventRegister(&c.wEntry)
	if a, err := ep.GetLocalAddress(); err == nil {
		c.local = addrPort(a)
	}
	if a, err := ep.GetRemoteAddress(); err == nil {
		c.remote = addrPort(a)
	}
	return c
}

func tcpAddr(a tcpip.FullAddress) *net.TCPAddr {
	return &net.TCPAddr{IP: net.IP(a.Addr.AsSlice()), Port: int(a.Port)}
}

// addrPort is a as a value; the zero AddrPort if a has no address.
func addrPort(a tcpip.FullAddress) netip.AddrPort {
	var ip netip.Addr
	switch a.Addr.Len() {
	case 4:
		ip = netip.AddrFrom4(a.Addr.As4())
	case 16:
		ip = netip.AddrFrom16(a.Addr.As16())
	}
	return netip.AddrPortFrom(ip, a.Port)
}

// netAddr is ap as the net package's address; nil for the zero one.
func netAddr(ap netip.AddrPort) net.Addr {
	if !ap.Addr().IsValid() {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

// opError wraps err as the net package does.
// Not inlined: its five inlined copies in Read made Read's frame over a
// kilobyte, on the goroutine stack of every connection.
//
//go:noinline
func (c *tcpConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: netAddr(c.local), Addr: netAddr(c.remote), Err: err}
}

// read reads what netstack has queued into b. It calls netstack's
// ReadCount, not Read: Read's 304-byte ReadResult, with the copies an
// interface call makes, would sit on this frame, and netstack's send
// path (an ACK for the segments it processes when the reader unlocks
// the endpoint) runs below it. It is a function of its
// own so that what it needs sits on the stack only while it runs: a
// goroutine blocked in Read then uses little of its stack, and the
// runtime shrinks an idle connection's goroutine stack, as it does for a
// kernel socket's.
//
//go:noinline
func (c *tcpConn) read(b []byte) (int, tcpip.Error) {
	c.rbuf = b
	return c.ep.ReadCount(&c.rbuf, tcpip.ReadOptions{})
}

// Read implements net.Conn.
func (c *tcpConn) Read(b []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.closed.Load() {
		return 0, c.opError("read", net.ErrClosed)
	}
	if len(b) == 0 {
		return 0, nil
	}
	if c.poll.Load() != nil {
		return 0, c.opError("read", errPolled)
	}
	expired := c.rDeadline.channel()
	for {
		n, err := c.read(b)
		switch err.(type) {
		case nil:
			if t := c.s.ep.Trace(); t != nil && n > 0 {
				t.Read()
			}
			return n, nil
		case *tcpip.ErrWouldBlock:
			select {
			case <-c.rNotify:
				if expired == nil {
					// A first deadline, set while this call
					// waited, wakes it (lazyDeadline.set).
					expired = c.rDeadline.channel()
				}
			case <-expired:
				return 0, c.opError("read", os.ErrDeadlineExceeded)
			}
		case *tcpip.ErrClosedForReceive:
			if c.closed.Load() {
				return 0, c.opError("read", net.ErrClosed)
			}
			return 0, io.EOF
		default:
			if c.closed.Load() {
				return 0, c.opError("read", net.ErrClosed)
			}
			return 0, c.opError("read", goError(err))
		}
	}
}

// Write implements net.Conn. It returns once all of b is queued, or with
// how much was when it fails.
func (c *tcpConn) Write(b []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	if t := c.s.ep.Trace(); t != nil {
		t.Mark(trace.StageWrite)
	}
	expired := c.wDeadline.channel()
	n := 0
	for n < len(b) {
		c.ownMu.Lock()
		if n += c.ownedWrite(b[n:]); n == len(b) {
			c.ownMu.Unlock()
			break
		}
		c.wbuf.Reset(b[n:])
		m, err := c.ep.Write(&c.wbuf, writeOptions(len(b)-n))
		c.ownMu.Unlock()
		n += int(m)
		if err != nil {
			if werr := c.writeWait(err, expired); werr != nil {
				return n, werr
			}
			if expired == nil {
				// A first deadline may have been set while
				// writeWait waited (lazyDeadline.set).
				expired = c.wDeadline.channel()
			}
		}
	}
	return n, nil
}

// atomicWriteMax is the largest write netstack copies into its send
// queue with the connection locked (WriteOptions.Atomic). netstack
// otherwise unlocks for the copy and locks again after, to re-check the
// room it found: two more lock round trips and an UnlockUser that looks
// for queued segments, a third of a small reply's send path; a large
// copy under the lock would keep the worker's fast path out for as long
// (FastMissBusy). Writers of one connection are serialised anyway
// (writeMu, or the stream's worker), so the room found stays theirs.
const atomicWriteMax = 16 << 10

// writeOptions is netstack's Write options for a write of n bytes.
func writeOptions(n int) tcpip.WriteOptions {
	return tcpip.WriteOptions{Atomic: n <= atomicWriteMax}
}

// TryWrite writes what of b the send buffer takes now and returns how
// much that was, without waiting for room (or for another Write to
// finish; it may wait the moment the worker holds the connection to
// carry a segment). It is for code that must not block, such as a consumer
// running on the worker (PollOnWorker): package qp's engine writes its
// responses with it there.
func (c *tcpConn) TryWrite(b []byte) (int, error) {
	if !c.writeMu.TryLock() {
		return 0, nil
	}
	defer c.writeMu.Unlock()
	if c.closed.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	if t := c.s.ep.Trace(); t != nil {
		t.Mark(trace.StageWrite)
	}
	c.ownMu.Lock()
	k := c.ownedWrite(b)
	if k == len(b) {
		c.ownMu.Unlock()
		return k, nil
	}
	c.wbuf.Reset(b[k:])
	m, err := c.ep.Write(&c.wbuf, writeOptions(len(b)-k))
	c.ownMu.Unlock()
	switch err.(type) {
	case nil, *tcpip.ErrWouldBlock:
		return k + int(m), nil
	}
	return k + int(m), c.writeError(err)
}

// writeWait waits, after a Write that could not queue everything, for
// room in the send buffer, or turns err into Write's error. It is a
// function of its own, kept out of Write's frame with the select and the
// error values: netstack's send path, down to the TX ring, runs below
// Write on the connection's goroutine, and every byte of Write's frame
// counts against the 4 KiB that goroutine's stack can stay at.
//
//go:noinline
func (c *tcpConn) writeWait(err tcpip.Error, expired <-chan struct{}) error {
	switch err.(type) {
	case *tcpip.ErrWouldBlock:
		select {
		case <-c.wNotify:
			return nil
		case <-expired:
			return c.opError("write", os.ErrDeadlineExceeded)
		}
	}
	return c.writeError(err)
}

// writeError is Write's error for a failed netstack write.
//
//go:noinline
func (c *tcpConn) writeError(err tcpip.Error) error {
	if c.closed.Load() {
		return c.opError("write", net.ErrClosed)
	}
	if _, ok := err.(*tcpip.ErrClosedForSend); ok {
		return c.opError("write", errPipe)
	}
	return c.opError("write", goError(err))
}

// Close implements net.Conn. Blocked Reads and Writes return
// net.ErrClosed.
func (c *tcpConn) Close() error {
	if c.closed.Swap(true) {
		return c.opError("close", net.ErrClosed)
	}
	c.disown()
	if c.ownReg.Load() {
		c.s.ep.UnregisterOwner(c.ep)
	}
	c.ep.Close()
	c.endPoll(net.ErrClosed)
	c.rDeadline.stop()
	c.wDeadline.stop()
	c.closeOnce.Do(func() {
		c.wq.EventUnregister(&c.rEntry)
		c.wq.EventUnregister(&c.wEntry)
		c.s.ports.releaseAfterClose(c.ep, c.keys)
	})
	return nil
}

// CloseRead shuts down the reading side.
func (c *tcpConn) CloseRead() error {
	c.disown()
	if err := c.ep.Shutdown(tcpip.ShutdownRead); err != nil {
		return c.opError("close", goError(err))
	}
	return nil
}

// CloseWrite shuts down the writing side: the peer reads EOF once it has
// read what was written.
func (c *tcpConn) CloseWrite() error {
	c.disown()
	if err := c.ep.Shutdown(tcpip.ShutdownWrite); err != nil {
		return c.opError("close", goError(err))
	}
	return nil
}

// LocalAddr implements net.Conn.
func (c *tcpConn) LocalAddr() net.Addr { return netAddr(c.local) }

// RemoteAddr implements net.Conn.
func (c *tcpConn) RemoteAddr() net.Addr { return netAddr(c.remote) }

// SetDeadline implements net.Conn.
func (c *tcpConn) SetDeadline(t time.Time) error {
	c.rDeadline.set(t, c.rNotify)
	c.wDeadline.set(t, c.wNotify)
	return nil
}

// SetReadDeadline implements net.Conn.
func (c *tcpConn) SetReadDeadline(t time.Time) error { c.rDeadline.set(t, c.rNotify); return nil }

// SetWriteDeadline implements net.Conn.
func (c *tcpConn) SetWriteDeadline(t time.Time) error { c.wDeadline.set(t, c.wNotify); return nil }

// errPipe is what writing to a connection whose sending side is shut down
// returns, as the kernel's EPIPE.
var errPipe = errors.New("broken pipe")

// deadline is one direction's deadline: a channel that is closed when it
// passes. Waiters take the channel once per call; setting a new deadline
// replaces a closed channel, and a pending timer is reused.
type deadline struct {
	mu      sync.Mutex
	ch      chan struct{}
	at      time.Time // zero: none
	expired bool      // ch is closed
	timer   *time.Timer
}

// lazyDeadline is a deadline made when one is first set: most
// connections never have one, and an idle server holds thousands.
type lazyDeadline struct{ p atomic.Pointer[deadline] }

// channel returns the channel a waiter selects on: nil (never ready)
// while no deadline was ever set. A waiter that took nil takes it again
// when woken: set wakes it once it makes the deadline.
func (l *lazyDeadline) channel() <-chan struct{} {
	if d := l.p.Load(); d != nil {
		return d.channel()
	}
	return nil
}

// set arms the deadline for t (zero: none). Making the deadline, it
// wakes a call waiting on wake, which may have taken the nil channel.
func (l *lazyDeadline) set(t time.Time, wake chan struct{}) {
	d := l.p.Load()
	if d == nil {
		if t.IsZero() {
			return
		}
		d = &deadline{ch: make(chan struct{})}
		if !l.p.CompareAndSwap(nil, d) {
			d = l.p.Load()
		} else {
			defer func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			}()
		}
	}
	d.set(t)
}

func (l *lazyDeadline) stop() {
	if d := l.p.Load(); d != nil {
		d.stop()
	}
}

// channel returns the channel a waiter selects on.
func (d *deadline) channel() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

// expire closes the channel if the deadline has passed: a timer armed for
// an earlier deadline may fire after a later one was set.
func (d *deadline) expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at.IsZero() || time.Now().Before(d.at) {
		return
	}
	if !d.expired {
		d.expired = true
		close(d.ch)
	}
}

// set arms the deadline for t; the zero time means none.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	if d.expired {
		d.ch = make(chan struct{})
		d.expired = false
	}
	d.at = t
	if t.IsZero() {
		d.mu.Unlock()
		return
	}
	wait := time.Until(t)
	if wait <= 0 {
		d.mu.Unlock()
		d.expire()
		return
	}
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, d.expire)
	} else {
		d.timer.Reset(wait)
	}
	d.mu.Unlock()
}

func (d *deadline) stop() {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
}
