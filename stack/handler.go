package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
	"github.com/ustack-dev/ustack/stack/internal/link"
	"github.com/ustack-dev/ustack/stack/internal/trace"
)

// Handlers: the run-to-completion API. A connection served by a Handler
// has no goroutine of its own: the worker that processed the segments
// calls the handler with the bytes, with the connection unlocked, and
// what the handler writes goes through netstack's send path onto the TX
// ring before the worker polls again, carrying the ACK the request was
// owed (delayed ACKs ride on replies). A segment the fast path's receive
// takes (tcp.Endpoint.ReceiveFast) is given to OnTraffic straight from the
// receive frame, right after its TCP processing and before the next
// frame's (takeDirect, runDirect); anything else is read from netstack's
// receive queue, from its buffers (tcp.Endpoint.ReadFunc).
//
// The worker finds a stream to serve on the endpoint's ready list, as it
// finds a PollOnWorker connection (workerpoll.go): the connection's
// readable event, an application's AsyncWrite or Wake, or room opening
// for pending writes pushes it there. A handler listener is on the same
// list: its readable event (a connection completed the handshake) makes
// the worker accept and open the connections.

// Handler serves connections on ustack's worker, run to completion, in
// the manner of gnet's and evio's event handlers. Every method is called
// on a worker goroutine, never concurrently for one connection, and must
// not block: every connection of the queue waits while it runs.
type Handler interface {
	// OnOpen is called once the connection is established, before any
	// OnTraffic. A listener's handler is called for each connection it
	// accepts; DialHandler's before DialHandler returns.
	OnOpen(s *Stream)
	// OnTraffic is called with bytes that arrived, in order. b is
	// the receive frame or netstack's buffer, valid only during the
	// call: copy what must outlive it (a partial request, say). One
	// batch of segments may take several calls. b is nil when the call
	// is a Wake's.
	OnTraffic(s *Stream, b []byte)
	// OnClose is called once, when the connection ends: err is nil
	// after Close, io.EOF after the peer's orderly close (the stream is
	// closed once what was written has been sent), net.ErrClosed when
	// the Stack closes, or the connection's error. No other call
	// follows it.
	OnClose(s *Stream, err error)
}

// Drainer is an optional Handler method: OnDrain is called on the worker
// when writes that the send buffer could not take at once (Buffered) have
// all been handed to TCP.
type Drainer interface {
	OnDrain(s *Stream)
}

// EOFHandler is an optional Handler method: OnEOF is called on the worker
// when the peer has closed its sending side (its FIN arrived, after every
// byte before it went to OnTraffic). What OnEOF writes is still sent; the
// stream then closes, and OnClose follows with io.EOF (nil if OnEOF
// closed the stream itself). Without it, the stream closes at the peer's
// FIN once what was written has been sent.
type EOFHandler interface {
	OnEOF(s *Stream)
}

// MaxBuffered is how many written bytes a Stream holds beyond what TCP's
// send buffer takes; a Write past it fails with ErrBufferFull.
const MaxBuffered = 4 << 20

// ErrBufferFull is returned by a Stream's Write when the bytes it could
// not hand to TCP yet would exceed MaxBuffered.
var ErrBufferFull = errors.New("ustack: stream's write buffer is full")

// maxStreamRead is about how many bytes one read hands a stream's
// handler: what one OnTraffic batch can make it write is bounded by it.
const maxStreamRead = 256 << 10

// maxAcceptTurn is how many connections a handler listener opens in one
// turn on the worker before it goes to the back of the ready list.
const maxAcceptTurn = 64

// Stream is a TCP connection served by a Handler. Its methods other than
// AsyncWrite, Wake, LocalAddr and RemoteAddr may be called only from its
// own handler's calls (not from another stream's: a stream may be served
// by another worker at the same time).
type Stream struct {
	st    *Stack
	ep    *tcp.Endpoint
	wq    *waiter.Queue
	keys  []portKey
	h     Handler
	local netip.AddrPort
	peer  netip.AddrPort

	poll   link.Ready   // the stream's place on the ready list
	wentry waiter.Entry // registered while pending holds bytes
	wreg   bool

	// Worker-side state, under poll's mutex (mu).
	mu       sync.Mutex
	wbuf     writeReader
	pending  []byte // written, not yet taken by TCP
	closing  bool   // Close asked for: close once pending is sent
	closed   bool   // the endpoint is closed
	endErr   error  // why the stream ended (OnClose's argument)
	ended    bool   // OnClose called
	onData   func([]byte)
	onQueued func([]byte) // onData for bytes from the receive queue, counted first
	userData any
	fast     tcp.FastConsumer // OnTraffic straight from the frame
	own      *link.Owned      // the owned fast path carries the connection (owned.go)

	// From any goroutine.
	amu      sync.Mutex
	async    []byte
	spare    []byte
	wake     atomic.Bool
	hasAsync atomic.Bool // async holds bytes (set and cleared under amu)
}

// writeReader is an io.Reader over one buffer, for netstack's Write.
type writeReader struct {
	b []byte
}

// Read implements io.Reader.
func (r *writeReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// Len is what netstack asks to size its copy.
func (r *writeReader) Len() int { return len(r.b) }

// LocalAddr returns the connection's local address.
func (s *Stream) LocalAddr() net.Addr { return netAddr(s.local) }

// RemoteAddr returns the peer's address.
func (s *Stream) RemoteAddr() net.Addr { return netAddr(s.peer) }

// Context returns what SetContext stored.
func (s *Stream) Context() any { return s.userData }

// SetContext stores v with the stream, for the handler's per-connection
// state.
func (s *Stream) SetContext(v any) { s.userData = v }

// Buffered returns how many written bytes wait for room in TCP's send
// buffer.
func (s *Stream) Buffered() int { return len(s.pending) }

// Write sends b: it hands TCP what its send buffer takes now and copies
// the rest, to be handed over as acknowledgements make room (in order,
// before anything written later); it never blocks. While bytes wait so
// (Buffered > 0) the stream reads no more, so a peer that sends faster
// than it reads the replies is held back by TCP's window, as a blocked
// writer's peer is; reading resumes once they are handed over (OnDrain).
// It returns len(b), or
// 0 and an error: ErrBufferFull if the held bytes would pass MaxBuffered,
// net.ErrClosed after Close, or the connection's error. Call it only on
// the worker (from the handler); other goroutines use AsyncWrite.
func (s *Stream) Write(b []byte) (int, error) {
	if s.closing || s.closed {
		return 0, s.opError("write", net.ErrClosed)
	}
	if len(b) == 0 {
		return 0, nil
	}
	if s.own != nil {
		if t := s.st.ep.Trace(); t != nil {
			t.Mark(trace.StageWrite)
		}
		n := s.own.Write(b)
		if n == len(b) {
			return n, nil
		}
		// The connection is netstack's again, with what the ring
		// took: the rest follows it there.
		m, err := s.Write(b[n:])
		return n + m, err
	}
	if len(s.pending) > 0 {
		if len(s.pending)+len(b) > MaxBuffered {
			return 0, s.opError("write", ErrBufferFull)
		}
		s.pending = append(s.pending, b...)
		return len(b), nil
	}
	if t := s.st.ep.Trace(); t != nil {
		t.Mark(trace.StageWrite)
	}
	s.wbuf.b = b
	m, err := s.ep.Write(&s.wbuf, writeOptions(len(b)))
	s.wbuf.b = nil
	switch err.(type) {
	case nil, *tcpip.ErrWouldBlock:
	case *tcpip.ErrClosedForSend:
		return 0, s.opError("write", errPipe)
	default:
		return 0, s.opError("write", goError(err))
	}
	if rest := b[m:]; len(rest) > 0 {
		if len(rest) > MaxBuffered {
			// TCP took m bytes; the caller learns of the rest by
			// the error. Nothing else is lost.
			return int(m), s.opError("write", ErrBufferFull)
		}
		s.pending = append(s.pending[:0], rest...)
		s.watchWritable(true)
	}
	return len(b), nil
}

// flush hands TCP what it takes of pending; on the worker.
func (s *Stream) flush() {
	if len(s.pending) == 0 || s.closed {
		return
	}
	s.wbuf.b = s.pending
	m, err := s.ep.Write(&s.wbuf, writeOptions(len(s.pending)))
	s.wbuf.b = nil
	switch err.(type) {
	case nil, *tcpip.ErrWouldBlock:
	default:
		s.pending = s.pending[:0]
		s.watchWritable(false)
		s.end(goError(err))
		return
	}
	n := copy(s.pending, s.pending[m:])
	s.pending = s.pending[:n]
	if n > 0 {
		return
	}
	if cap(s.pending) > 64<<10 {
		s.pending = nil
	}
	s.watchWritable(false)
	if s.closing {
		s.closeNow(s.endErr)
		return
	}
	if d, ok := s.h.(Drainer); ok {
		d.OnDrain(s)
	}
}

// watchWritable (un)registers the stream for room in the send buffer.
func (s *Stream) watchWritable(on bool) {
	if on == s.wreg {
		return
	}
	s.wreg = on
	if on {
		s.wq.EventRegister(&s.wentry)
		// Room that opened between the short write and the
		// registration fired no event: have the worker try again.
		s.poll.Push()
	} else {
		s.wq.EventUnregister(&s.wentry)
	}
}

// Close closes the connection once what was written has been handed to
// TCP (which sends it, then FIN); OnClose follows, with a nil error,
// after the current handler call returns. Call it only on the worker.
func (s *Stream) Close() error {
	if s.closing || s.closed {
		return s.opError("close", net.ErrClosed)
	}
	s.closing = true
	if len(s.pending) == 0 {
		s.closeNow(nil)
	}
	return nil
}

// CloseWrite shuts down the sending side once what was written has been
// sent: the peer reads EOF. Call it only on the worker.
func (s *Stream) CloseWrite() error {
	s.disown(link.DemoteClose)
	if len(s.pending) > 0 {
		return s.opError("close", errors.New("written bytes still wait for room; call CloseWrite from OnDrain"))
	}
	if err := s.ep.Shutdown(tcpip.ShutdownWrite); err != nil {
		return s.opError("close", goError(err))
	}
	return nil
}

// AsyncWrite queues b (copied) to be written on the worker, after what
// the handler has written; it is safe from any goroutine. Errors are the
// handler's to see (OnClose); AsyncWrite itself fails only if the stream
// has ended, or with ErrBufferFull. Bytes queued while the stream is
// closing are dropped.
func (s *Stream) AsyncWrite(b []byte) error {
	s.amu.Lock()
	if s.poll.Ended() {
		s.amu.Unlock()
		return s.opError("write", net.ErrClosed)
	}
	if len(s.async)+len(b) > MaxBuffered {
		s.amu.Unlock()
		return s.opError("write", ErrBufferFull)
	}
	s.async = append(s.async, b...)
	s.hasAsync.Store(len(s.async) > 0)
	s.amu.Unlock()
	s.poll.Push()
	return nil
}

// Wake has the worker call OnTraffic with nil bytes soon; it is safe from
// any goroutine, and several Wakes before the call make one.
func (s *Stream) Wake() error {
	if s.poll.Ended() {
		return s.opError("wake", net.ErrClosed)
	}
	s.wake.Store(true)
	s.poll.Push()
	return nil
}

// serve is the stream's turn on a worker.
func (s *Stream) serve() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if s.wake.Swap(false) && !s.closing && !s.closed {
		s.h.OnTraffic(s, nil)
	}
	s.takeAsync()
	s.flush()
	for i := 0; !s.closing && !s.closed && len(s.pending) == 0 && s.own == nil; i++ {
		if i == maxPollReads {
			s.poll.Push()
			break
		}
		_, err := s.ep.ReadFunc(maxStreamRead, s.onQueued)
		if err == nil {
			continue
		}
		switch err.(type) {
		case *tcpip.ErrWouldBlock:
		case *tcpip.ErrClosedForReceive:
			// The peer's FIN: the handler's last word, then close
			// once what was written is sent.
			if e, ok := s.h.(EOFHandler); ok && !s.closed {
				e.OnEOF(s)
			}
			if s.closed || s.closing && len(s.pending) == 0 {
				break // OnEOF closed it
			}
			s.closing = true
			s.endErr = io.EOF
			if len(s.pending) == 0 {
				s.closeNow(io.EOF)
			}
		default:
			if s.st.isClosed() {
				// netstack aborts every endpoint as the Stack closes.
				s.end(net.ErrClosed)
			} else {
				s.end(s.opError("read", goError(err)))
			}
		}
		break
	}
	s.finish()
}

// finish calls OnClose once the stream has closed.
func (s *Stream) finish() {
	if s.closed && !s.ended {
		s.ended = true
		s.poll.End()
		s.h.OnClose(s, s.endErr)
		s.st.streams.remove(s)
	}
}

// takeDirect is the fast path's consumer (netstack's FastConsumer.Take)
// for a stream: the payload of an in-order segment, while nothing waits
// in the receive queue, goes to OnTraffic straight from the receive
// frame (runDirect), with no copy into netstack's buffers and no turn on
// the ready list, if the stream can take it now: not closing, no written
// bytes held back (which stop reading), no Wake or AsyncWrite pending
// (serve writes those before it reads: a reply written here would go
// ahead of them), and not being served by another worker. It keeps the
// stream's lock for runDirect.
// Called with the connection locked, on the worker that received it.
func (s *Stream) takeDirect(b []byte) bool {
	if !s.mu.TryLock() {
		return false
	}
	if s.ended || s.closing || s.closed || len(s.pending) > 0 || s.wake.Load() || s.hasAsync.Load() || s.own != nil {
		s.mu.Unlock()
		return false
	}
	return true
}

// runDirect (FastConsumer.Taken) calls OnTraffic with the bytes
// takeDirect took, the connection unlocked, so that the handler's reply
// goes out at once, carrying the ACK the request is owed. If the request
// came alone in its RX batch, the worker kicks the reply right here,
// before netstack processes the ACK the request carried and before the
// batch's deferred work: in copy mode the frame leaves only with the
// kick. Batches of several frames keep one kick for all their replies.
func (s *Stream) runDirect(b []byte, d gstack.Deferrer) {
	s.st.streamDirect.Add(uint64(len(b)))
	s.onData(b)
	s.finish()
	s.mu.Unlock()
	s.st.ep.FlushIfSolo(d)
}

// takeAsync writes what other goroutines queued with AsyncWrite.
func (s *Stream) takeAsync() {
	s.amu.Lock()
	b := s.async
	s.async, s.spare = s.spare[:0], nil
	s.hasAsync.Store(false)
	s.amu.Unlock()
	if len(b) == 0 {
		s.amu.Lock()
		if s.spare == nil {
			s.spare = b
		}
		s.amu.Unlock()
		return
	}
	if !s.closing && !s.closed {
		if _, err := s.Write(b); err != nil && !errors.Is(err, net.ErrClosed) {
			s.end(err)
		}
	}
	s.amu.Lock()
	if s.spare == nil && cap(b) <= 64<<10 {
		s.spare = b[:0]
	}
	s.amu.Unlock()
}

// end closes the stream at once (an error: nothing more can be sent).
func (s *Stream) end(err error) {
	if s.closed {
		return
	}
	s.disown(link.DemoteClose)
	s.closing = true
	s.pending = nil
	s.closeNow(err)
}

// closeNow closes the endpoint; serve calls OnClose.
func (s *Stream) closeNow(err error) {
	if s.closed {
		return
	}
	s.disown(link.DemoteClose)
	s.st.ep.UnregisterOwner(s.ep)
	s.closed = true
	s.endErr = err
	s.watchWritable(false)
	s.wq.EventUnregister(s.poll.Entry())
	s.ep.Close()
	s.st.ports.releaseAfterClose(s.ep, s.keys)
}

//go:noinline
func (s *Stream) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: netAddr(s.local), Addr: netAddr(s.peer), Err: err}
}

// newStream makes a stream of an established endpoint and has the worker
// open it. It takes over ep and keys.
func (st *Stack) newStream(ep *tcp.Endpoint, wq *waiter.Queue, keys []portKey, h Handler) *Stream {
	s := &Stream{st: st, ep: ep, wq: wq, keys: keys, h: h}
	if a, err := ep.GetLocalAddress(); err == nil {
		s.local = addrPort(a)
	}
	if a, err := ep.GetRemoteAddress(); err == nil {
		s.peer = addrPort(a)
	}
	s.onData = func(b []byte) {
		if s.closing || s.closed {
			return
		}
		if t := st.ep.Trace(); t != nil {
			t.Read()
		}
		s.h.OnTraffic(s, b)
	}
	s.onQueued = func(b []byte) {
		st.streamQueued.Add(uint64(len(b)))
		s.onData(b)
	}
	s.poll.Init(st.ep.Ready(), s.serve, waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr)
	s.wentry.Init(&s.poll, waiter.WritableEvents)
	if !st.cfg.Debug.NoFastPath {
		s.fast = tcp.FastConsumer{Take: s.takeDirect, Taken: s.runDirect, Left: &st.streamLeft}
	}
	return s
}

// open calls OnOpen and starts serving the stream; on the worker, or
// (DialHandler) on the dialer's goroutine before any worker knows the
// stream.
func (s *Stream) open() {
	s.mu.Lock()
	if !s.st.streams.add(s, s.stackClosed) {
		// The Stack is closing.
		s.ended = true
		s.poll.End()
		s.ep.Close()
		s.st.ports.releaseAfterClose(s.ep, s.keys)
		s.mu.Unlock()
		return
	}
	s.h.OnOpen(s)
	if !s.closed {
		s.wq.EventRegister(s.poll.Entry())
		if s.fast.Take != nil {
			s.ep.SetFastConsumer(&s.fast)
			s.st.ep.RegisterOwner(s.ep, (*streamOwner)(s))
		}
	}
	s.mu.Unlock()
	// What arrived before the registration fired no event (and a stream
	// OnOpen closed is owed its OnClose).
	s.poll.Push()
}

// stackClosed tells the handler that the Stack closed, unless the stream
// has ended; called by the Stack's Close once the workers have stopped.
func (s *Stream) stackClosed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	s.poll.End()
	s.disown(link.DemoteClose)
	s.st.ep.UnregisterOwner(s.ep)
	s.closed = true
	s.watchWritable(false)
	s.wq.EventUnregister(s.poll.Entry())
	s.ep.Close()
	s.h.OnClose(s, net.ErrClosed)
}

// HandlerListener accepts connections for a Handler on the worker.
type HandlerListener struct {
	st     *Stack
	ep     tcpip.Endpoint
	wq     *waiter.Queue
	keys   []portKey
	h      Handler
	poll   link.Ready
	addr   net.Addr
	once   sync.Once
	closed atomic.Bool
}

// ListenHandler announces on the stack's addresses, as Listen does, and
// serves every connection it accepts with h, on the worker: no goroutine
// per connection. Connections already accepted stay open after the
// listener's Close.
func (st *Stack) ListenHandler(network, address string, h Handler) (*HandlerListener, error) {
	if h == nil {
		return nil, opError("listen", network, nil, errors.New("nil Handler"))
	}
	ep, wq, keys, err := st.listen(network, address)
	if err != nil {
		return nil, err
	}
	l := &HandlerListener{st: st, ep: ep, wq: wq, keys: keys, h: h}
	if a, err := ep.GetLocalAddress(); err == nil {
		l.addr = tcpAddr(a)
	}
	l.poll.Init(st.ep.Ready(), l.accept, waiter.ReadableEvents)
	wq.EventRegister(l.poll.Entry())
	l.poll.Push()
	return l, nil
}

// Addr returns the listener's address.
func (l *HandlerListener) Addr() net.Addr { return l.addr }

// Close stops accepting. Connections already accepted stay open.
func (l *HandlerListener) Close() error {
	if l.closed.Swap(true) {
		return &net.OpError{Op: "close", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
	l.poll.End()
	l.wq.EventUnregister(l.poll.Entry())
	l.ep.Close()
	l.once.Do(func() { l.st.ports.releaseAll(l.keys) })
	return nil
}

// accept opens the connections that completed their handshake; on the
// worker.
func (l *HandlerListener) accept() {
	for i := 0; !l.closed.Load(); i++ {
		if i == maxAcceptTurn {
			l.poll.Push()
			return
		}
		n, wq, err := l.ep.Accept(nil)
		if err != nil {
			return
		}
		if aerr := l.st.ports.acquireAll(l.keys); aerr != nil {
			n.Close()
			continue
		}
		l.st.newStream(n.(*tcp.Endpoint), wq, l.keys, l.h).open()
	}
}

// DialHandler connects to address as DialContext does and serves the
// connection with h on the worker; OnOpen is called before it returns.
func (st *Stack) DialHandler(ctx context.Context, network, address string, h Handler) (*Stream, error) {
	if h == nil {
		return nil, opError("dial", network, nil, errors.New("nil Handler"))
	}
	if len(network) < 3 || network[:3] != "tcp" {
		return nil, opError("dial", network, nil, fmt.Errorf("DialHandler is for TCP: %w", net.UnknownNetworkError(network)))
	}
	c, err := st.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	tc := c.(*tcpConn)
	tc.wq.EventUnregister(&tc.rEntry)
	tc.wq.EventUnregister(&tc.wEntry)
	s := st.newStream(tc.ep, tc.wq, tc.keys, h)
	s.open()
	return s, nil
}
