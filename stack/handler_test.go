package stack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/seqnum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
)

// echoHandler echoes what it receives; it records its calls.
type echoHandler struct {
	opened, closed atomic.Int32
	mu             sync.Mutex
	errs           []error
	drains         atomic.Int32
	wakes          atomic.Int32
	quit           []byte // a message that makes it Close
	worker         func() bool
	notOnWorker    atomic.Int32
}

func (h *echoHandler) OnOpen(s *Stream) { h.opened.Add(1) }

func (h *echoHandler) OnTraffic(s *Stream, b []byte) {
	if b == nil {
		h.wakes.Add(1)
		s.Write([]byte("woken"))
		return
	}
	if h.quit != nil && bytes.Equal(b, h.quit) {
		s.Write([]byte("bye"))
		s.Close()
		return
	}
	if _, err := s.Write(b); err != nil {
		h.mu.Lock()
		h.errs = append(h.errs, err)
		h.mu.Unlock()
	}
}

func (h *echoHandler) OnClose(s *Stream, err error) {
	h.closed.Add(1)
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
}

func (h *echoHandler) OnDrain(s *Stream) { h.drains.Add(1) }

func (h *echoHandler) closeErrs() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.errs...)
}

// dialHandler has mp.b serve h on port and returns mp.a's connection to
// it over network at to, with a deadline d from now; the listener and
// the connection close with the test.
func dialHandler(t *testing.T, mp *memPair, network string, to netip.Addr, port uint16, h Handler, d time.Duration) net.Conn {
	t.Helper()
	ln, err := mp.b.ListenHandler(network, fmt.Sprintf(":%d", port), h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := mp.a.Dial(network, netip.AddrPortFrom(to, port).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(d))
	return c
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMemHandlerEcho: a handler listener echoes, over IPv4 and IPv6 and
// every polling policy, messages from one byte to 4 MiB, and the peer's
// close reaches OnClose as io.EOF.
func TestMemHandlerEcho(t *testing.T) {
	for _, policy := range []PollPolicy{Spin, Adaptive, Blocking} {
		for _, fam := range []struct {
			network string
			addr    netip.Prefix
		}{{"tcp4", memB4}, {"tcp6", memB6}} {
			t.Run(policy.String()+"/"+fam.network, func(t *testing.T) {
				mp := newMemPair(t, policy)
				h := &echoHandler{}
				c := dialHandler(t, mp, fam.network, fam.addr.Addr(), 7, h, 30*time.Second)
				rng := rand.New(rand.NewPCG(1, 2))
				for _, size := range []int{1, 64, 1460, 1461, 65536, 4 << 20} {
					msg := make([]byte, size)
					for i := range msg {
						msg[i] = byte(rng.Uint32())
					}
					go c.Write(msg)
					got := make([]byte, size)
					if _, err := io.ReadFull(c, got); err != nil {
						t.Fatalf("%d bytes: %v", size, err)
					}
					if sha256.Sum256(got) != sha256.Sum256(msg) {
						t.Fatalf("%d bytes: echo differs", size)
					}
				}
				c.Close()
				waitFor(t, "OnClose", func() bool { return h.closed.Load() == 1 })
				if h.opened.Load() != 1 {
					t.Errorf("OnOpen called %d times, want 1", h.opened.Load())
				}
				if errs := h.closeErrs(); len(errs) != 1 || errs[0] != io.EOF {
					t.Errorf("errors seen %v, want OnClose's io.EOF only", errs)
				}
			})
		}
	}
}

// TestMemHandlerSlowReader: a peer that sends 16 MiB before it reads any
// of the echo back is held back by TCP's window, not answered with
// ErrBufferFull: a stream whose writes wait for room reads no more.
func TestMemHandlerSlowReader(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	h := &echoHandler{}
	c := dialHandler(t, mp, "tcp4", memB4.Addr(), 9, h, 30*time.Second)
	const size = 16 << 20
	msg := make([]byte, size)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range msg {
		msg[i] = byte(rng.Uint32())
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		wrote <- err
	}()
	// Long enough for the server to have read far past MaxBuffered if
	// nothing held it back.
	time.Sleep(300 * time.Millisecond)
	got := make([]byte, size)
	_, rerr := io.ReadFull(c, got)
	if werr := <-wrote; werr != nil || rerr != nil {
		errs := h.closeErrs()
		t.Fatalf("write: %v; read: %v; the handler saw %d errors, the first %v", werr, rerr, len(errs), append(errs, nil)[0])
	}
	if sha256.Sum256(got) != sha256.Sum256(msg) {
		t.Fatal("echo differs")
	}
	if errs := h.closeErrs(); len(errs) != 0 {
		t.Fatalf("handler saw %v", errs)
	}
	if h.drains.Load() == 0 {
		t.Errorf("16 MiB echoed to a slow reader without OnDrain: the stream never held writes back")
	}
	// What the stream did not take from the frame (it refuses bytes
	// while its writes are held back, later ones queue behind them, and
	// a zero window sends segments the slow way: the mix depends on
	// timing) is counted, by reason, as it was left in the queue.
	st := mp.b.Stats()
	t.Logf("bytes left in the queue: slow %d, behind %d, refused %d, large %d, before %d; %d from the queue, %d from the frame",
		st.FastPath.Handler.LeftSlow, st.FastPath.Handler.LeftBehind, st.FastPath.Handler.LeftRefused, st.FastPath.Handler.LeftLarge, st.FastPath.Handler.LeftBefore, st.FastPath.Handler.Queued, st.FastPath.Handler.Direct)
	if st.FastPath.Handler.Queued == 0 {
		t.Error("a stream that held its writes back took every byte from the frame")
	}
	if sum := st.FastPath.Handler.LeftSlow + st.FastPath.Handler.LeftBehind + st.FastPath.Handler.LeftRefused + st.FastPath.Handler.LeftLarge + st.FastPath.Handler.LeftBefore; sum != st.FastPath.Handler.Queued {
		t.Errorf("%d bytes counted left by reason, %d read from the queue", sum, st.FastPath.Handler.Queued)
	}
}

// TestMemHandlerCloseAsyncWake: Close from OnTraffic sends what was
// written, then FIN, and OnClose gets nil; AsyncWrite and Wake from
// another goroutine reach the peer through the worker.
func TestMemHandlerCloseAsyncWake(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	h := &echoHandler{quit: []byte("quit")}
	var streams sync.Map
	opened := make(chan *Stream, 1)
	ln, err := mp.b.ListenHandler("tcp4", ":8", &openSpy{Handler: h, opened: opened})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), 8).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	s := <-opened
	streams.Store(s, true)
	if err := s.AsyncWrite([]byte("async")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "async" {
		t.Fatalf("AsyncWrite: read %q, %v", got, err)
	}
	if err := s.Wake(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "woken" {
		t.Fatalf("Wake: read %q, %v", got, err)
	}
	if _, err := c.Write([]byte("quit")); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(c)
	if err != nil || string(rest) != "bye" {
		t.Fatalf("after quit: read %q, %v; want \"bye\" then EOF", rest, err)
	}
	waitFor(t, "OnClose", func() bool { return h.closed.Load() == 1 })
	if errs := h.closeErrs(); len(errs) != 1 || errs[0] != nil {
		t.Errorf("errors seen %v, want OnClose's nil only", errs)
	}
	if err := s.AsyncWrite([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("AsyncWrite after close: %v, want net.ErrClosed", err)
	}
	if err := s.Wake(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Wake after close: %v, want net.ErrClosed", err)
	}
	// The port stays owned by the listener, and the connection's
	// hold on it goes once it has finished closing.
	if !mp.ownB.has(portKey{memB4.Addr(), 6, 8}) {
		t.Error("listener's port no longer owned")
	}
	c.Close()
	ln.Close()
	waitFor(t, "the port's release", func() bool { return !mp.ownB.has(portKey{memB4.Addr(), 6, 8}) })
}

// openSpy hands each opened stream to a channel.
type openSpy struct {
	Handler
	opened chan *Stream
}

func (o *openSpy) OnOpen(s *Stream) {
	o.Handler.OnOpen(s)
	select {
	case o.opened <- s:
	default:
	}
}

// TestMemDialHandler: a dialed connection served by a handler; OnOpen
// runs before DialHandler returns, and the Stack's Close ends it with
// net.ErrClosed.
func TestMemDialHandler(t *testing.T) {
	mp := newMemPair(t, Spin)
	ln, err := mp.b.Listen("tcp4", ":9")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echo(t, ln)
	got := make(chan []byte, 16)
	h := &funcHandler{
		open: func(s *Stream) { s.Write([]byte("hello")) },
		traffic: func(s *Stream, b []byte) {
			got <- append([]byte(nil), b...)
		},
	}
	s, err := mp.a.DialHandler(context.Background(), "tcp4", netip.AddrPortFrom(memB4.Addr(), 9).String(), h)
	if err != nil {
		t.Fatal(err)
	}
	if h.opens.Load() != 1 {
		t.Fatalf("OnOpen called %d times before DialHandler returned", h.opens.Load())
	}
	var all []byte
	for len(all) < 5 {
		select {
		case b := <-got:
			all = append(all, b...)
		case <-time.After(5 * time.Second):
			t.Fatalf("echo not back: %q", all)
		}
	}
	if string(all) != "hello" {
		t.Fatalf("echoed %q", all)
	}
	if s.RemoteAddr().String() != netip.AddrPortFrom(memB4.Addr(), 9).String() {
		t.Errorf("RemoteAddr %v", s.RemoteAddr())
	}
	mp.a.Close()
	if err := h.closeErr(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("OnClose after the Stack's Close: %v, want net.ErrClosed", err)
	}
	if _, err := mp.a.DialHandler(context.Background(), "udp4", "198.18.1.2:9", h); err == nil {
		t.Error("DialHandler over UDP succeeded")
	}
	if _, err := mp.b.ListenHandler("tcp4", ":10", nil); err == nil {
		t.Error("ListenHandler with a nil Handler succeeded")
	}
}

// funcHandler is a Handler of functions.
type funcHandler struct {
	open    func(*Stream)
	traffic func(*Stream, []byte)
	opens   atomic.Int32
	mu      sync.Mutex
	err     error
	closed  bool
}

func (h *funcHandler) OnOpen(s *Stream) {
	h.opens.Add(1)
	if h.open != nil {
		h.open(s)
	}
}

func (h *funcHandler) OnTraffic(s *Stream, b []byte) {
	if h.traffic != nil {
		h.traffic(s, b)
	}
}

func (h *funcHandler) OnClose(s *Stream, err error) {
	h.mu.Lock()
	h.err, h.closed = err, true
	h.mu.Unlock()
}

func (h *funcHandler) closeErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		return errors.New("OnClose not called")
	}
	return h.err
}

// TestMemHandlerRequestAllocs: with a handler serving, a request/response
// round trip allocates nothing: the request frame through the worker,
// netstack and the handler, the reply through netstack and the TX ring,
// and the client's net.Conn side.
func TestMemHandlerRequestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	mp := newMemPair(t, Spin)
	c := dialHandler(t, mp, "tcp4", memB4.Addr(), 11, &echoHandler{}, time.Minute)
	req, got := make([]byte, 64), make([]byte, 64)
	roundTrip := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		roundTrip()
	}
	if n := testing.AllocsPerRun(2000, roundTrip); n > 0.01 {
		t.Fatalf("%.2f allocations per round trip, want 0", n)
	}
}

// TestMemHandlerCloseInOnOpen: a handler that refuses connections by
// closing them in OnOpen still gets OnClose, once, and the peer sees the
// connection end.
func TestMemHandlerCloseInOnOpen(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	h := &funcHandler{open: func(s *Stream) { s.Write([]byte("no")); s.Close() }}
	c := dialHandler(t, mp, "tcp4", memB4.Addr(), 12, h, 5*time.Second)
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "no" {
		t.Fatalf("read %q, %v; want \"no\" then EOF", got, err)
	}
	waitFor(t, "OnClose", func() bool { return h.closeErr() == nil })
}

// TestMemHandlerConnectionMemory compares what 2,000 idle connections
// hold, both ends together (live heap plus goroutine stacks), when the
// server is a Handler and when it is a goroutine per net.Conn reading a
// 128-byte buffer: the handler's connections have no goroutine, so they
// must hold less, by at least the 2 KiB a parked goroutine's smallest
// stack takes.
func TestMemHandlerConnectionMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector enlarges every frame and object")
	}
	const n = 2000
	measure := func(handler bool) int64 {
		mp := newMemPair(t, Spin)
		if handler {
			ln, err := mp.b.ListenHandler("tcp4", ":7", &echoHandler{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
		} else {
			ln, err := mp.b.Listen("tcp4", ":7")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			acceptEach(ln, func(c net.Conn) {
				defer c.Close()
				b := make([]byte, 128)
				for {
					n, err := c.Read(b)
					if err != nil {
						return
					}
					c.Write(b[:n])
				}
			})
		}
		var before, after runtime.MemStats
		settleHeap(&before)
		echoConns(t, mp, n)
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&after)
		return (int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)) / n
	}
	conn := measure(false)
	hand := measure(true)
	t.Logf("%d idle connections, both ends, heap + stacks: %d bytes each with a net.Conn server, %d with a Handler", n, conn, hand)
	if hand > conn-2<<10 {
		t.Errorf("a Handler's connection holds %d bytes, a net.Conn server's %d: want at least 2 KiB less", hand, conn)
	}
}

// eofHandler answers the peer's FIN with a last word.
type eofHandler struct{ funcHandler }

func (h *eofHandler) OnEOF(s *Stream) { s.Write([]byte("goodbye")) }

// TestMemHandlerEOF: a handler with OnEOF writes after the peer's FIN
// (half-close, as a server that answers once the request stream ends),
// and the stream closes after; OnClose gets io.EOF.
func TestMemHandlerEOF(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	h := &eofHandler{}
	c := dialHandler(t, mp, "tcp4", memB4.Addr(), 13, h, 5*time.Second)
	c.Write([]byte("request"))
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "goodbye" {
		t.Fatalf("read %q, %v; want \"goodbye\" then EOF", got, err)
	}
	waitFor(t, "OnClose", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.closed })
	if err := h.closeErr(); err != io.EOF {
		t.Errorf("OnClose: %v, want io.EOF", err)
	}
}

// TestMemHandlerFromTheFrame: with the fast path, a handler's OnTraffic
// is given a request's bytes straight from the receive frame (netstack's
// FastConsumer), on the worker, before the frame is recycled: all of a
// quiet ping-pong's. Without it (Config.Debug.NoFastPath) every byte comes
// through the receive queue. With faults on the wire, the segments out of
// order take the queue and direct delivery resumes once it is empty. A
// 1 MiB message, which fills the send buffer (writes held back stop
// direct delivery), echoes whole every way.
func TestMemHandlerFromTheFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"fast-path", nil},
		{"no-fast-path", func(c *Config) { c.Debug.NoFastPath = true }},
		{"faults", func(c *Config) {
			c.Faults = &Faults{Seed: 9, RX: FaultRates{Drop: 0.01, Reorder: 0.01, Duplicate: 0.01, Corrupt: 0.01}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mp := newMemPairCfg(t, Adaptive, tc.cfg, tc.cfg)
			h := &echoHandler{}
			c := dialHandler(t, mp, "tcp4", memB4.Addr(), 11, h, 60*time.Second)
			before := mp.b.Stats()
			const rounds = 500
			msg, got := make([]byte, 64), make([]byte, 64)
			for i := 0; i < rounds; i++ {
				for j := range msg {
					msg[j] = byte(i + j)
				}
				if _, err := c.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(c, got); err != nil {
					t.Fatalf("round %d: %v", i, err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("round %d: echo differs", i)
				}
			}
			st := mp.b.Stats()
			direct, queued := st.FastPath.Handler.Direct-before.FastPath.Handler.Direct, st.FastPath.Handler.Queued-before.FastPath.Handler.Queued
			t.Logf("ping-pong: %d bytes from the frame, %d from the receive queue", direct, queued)
			if direct+queued != rounds*64 {
				t.Fatalf("OnTraffic was given %d bytes, want the %d written", direct+queued, rounds*64)
			}
			switch {
			case tc.name == "no-fast-path" && direct != 0:
				t.Errorf("%d bytes given from the frame with the fast path off", direct)
			case tc.name == "fast-path" && queued > direct:
				t.Errorf("%d bytes came through the receive queue beside %d from the frame: want most from the frame", queued, direct)
			case tc.name != "no-fast-path" && direct == 0:
				t.Error("no byte given from the frame")
			}

			big := make([]byte, 1<<20)
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range big {
				big[i] = byte(rng.Uint32())
			}
			go c.Write(big)
			back := make([]byte, len(big))
			if _, err := io.ReadFull(c, back); err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(back) != sha256.Sum256(big) {
				t.Fatal("1 MiB echo differs")
			}
			if errs := h.closeErrs(); len(errs) != 0 {
				t.Fatalf("handler saw %v", errs)
			}

			// Every byte read from the queue was counted as it was
			// left there, with its reason.
			end := mp.b.Stats()
			queued = end.FastPath.Handler.Queued - before.FastPath.Handler.Queued
			left := [...]uint64{end.FastPath.Handler.LeftSlow - before.FastPath.Handler.LeftSlow, end.FastPath.Handler.LeftBehind - before.FastPath.Handler.LeftBehind,
				end.FastPath.Handler.LeftRefused - before.FastPath.Handler.LeftRefused, end.FastPath.Handler.LeftLarge - before.FastPath.Handler.LeftLarge,
				end.FastPath.Handler.LeftBefore - before.FastPath.Handler.LeftBefore}
			t.Logf("all: %d bytes from the queue; left there slow %d, behind %d, refused %d, large %d, before %d", queued, left[0], left[1], left[2], left[3], left[4])
			sum := left[0] + left[1] + left[2] + left[3] + left[4]
			switch {
			case tc.name == "no-fast-path" && sum != 0:
				t.Errorf("%d bytes counted left with the fast path off, where there is no consumer", sum)
			case tc.name != "no-fast-path" && sum != queued:
				t.Errorf("%d bytes counted left by reason, %d read from the queue", sum, queued)
			case tc.name == "faults" && left[0] == 0:
				t.Error("no byte left to the slow path with loss and reordering on the wire")
			}
			// The owned fast path carried the connection, and under
			// faults handed it back to netstack and took it again,
			// the echoes whole throughout.
			if o := end.FastPath.Owned; tc.name != "no-fast-path" {
				t.Logf("owned fast path: %d promotions, demotions %v, %d segments in", o.Promotions, o.DemotionsBy, o.SegmentsIn)
				switch {
				case o.Promotions == 0 || o.SegmentsIn == 0:
					t.Error("the owned fast path carried nothing")
				case tc.name == "faults" && o.Demotions < 2:
					t.Errorf("%d demotions with loss and reordering on the wire, want some", o.Demotions)
				}
			}
		})
	}
}

// connectHandler opens a handler listener serving h on ustack's address,
// port 80, and connects to it as the peer's Connect does (HandshakeRTT
// applies); it returns the accepted connection's endpoint.
func connectHandler(t *testing.T, p *scriptPeer, h Handler) *tcp.Endpoint {
	t.Helper()
	ln, err := p.s.ListenHandler("tcp4", netip.AddrPortFrom(p.remote.Addr(), 80).String(), h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	p.Send(seg{Flags: "S", Seq: 0})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
	p.handshakeDelay()
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	var ep *tcp.Endpoint
	waitFor(t, "the handler's stream", func() bool {
		p.s.streams.mu.Lock()
		defer p.s.streams.mu.Unlock()
		for s := range p.s.streams.set {
			ep = s.(*Stream).ep
		}
		return ep != nil
	})
	return ep
}

// netstackFastPath configures a test of netstack's fast path for
// handlers (Config.Debug.NetstackFastPath), where the owned one would carry
// the connection.
func netstackFastPath(c *Config) { c.Debug.NetstackFastPath = true }

// TestScriptHandlerReplyBeforeAck: a handler's request taken by the fast
// path is answered before netstack processes the ACK the request
// carries (the fast path's FastConsumer.Taken). Seen from the
// wire nothing changes: each reply acknowledges its request and echoes
// its TSval, no pure ACK precedes it, and the ACK the next request
// carries for the previous reply is acted on (SND.UNA moves up to the
// reply still in flight, which is then the only one outstanding).
// netstack's fast path: the owned one keeps netstack's state parked.
func TestScriptHandlerReplyBeforeAck(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, Config: netstackFastPath})
	ep := connectHandler(t, p, &echoHandler{})

	before := p.s.Stats()
	seq, ack := uint32(1), uint32(1)
	for i, req := range []string{"first request", "second", "third one"} {
		tsval := uint32(50000 + i*100) // past the handshake's TSval
		p.Send(seg{Flags: "PA", Seq: seq, Ack: ack, Payload: []byte(req), TSval: tsval})
		seq += uint32(len(req))
		got := p.Expect(seg{Flags: "PA", Seq: ack, Ack: seq, Payload: []byte(req)})
		if !got.TS || got.TSecr != tsval {
			t.Fatalf("reply %d echoes TSval %d (option %v), want %d", i, got.TSecr, got.TS, tsval)
		}
		ack += uint32(len(req))
	}
	p.ExpectNothing(20 * time.Millisecond)
	st := p.s.Stats()
	if d := st.FastPath.Handler.Direct - before.FastPath.Handler.Direct; d != uint64(seq-1) {
		t.Errorf("%d bytes given from the frame, want all %d", d, seq-1)
	}
	fs := ep.FastState()
	if out := fs.SndNxt - fs.SndUna; out != seqnum.Value(len("third one")) {
		t.Errorf("%d bytes outstanding after the third request, want the third reply's %d: an ACK went unprocessed", out, len("third one"))
	}
	if fs.RcvNxt != fs.MaxSentAck {
		t.Errorf("RCV.NXT %d, last ACK sent %d: a reply did not carry its ACK", fs.RcvNxt, fs.MaxSentAck)
	}
}

// slowEchoHandler is echoHandler, holding the worker for slowFor before
// it echoes the message "slow".
type slowEchoHandler struct {
	echoHandler
	slowFor time.Duration
}

func (h *slowEchoHandler) OnTraffic(s *Stream, b []byte) {
	if string(b) == "slow" {
		time.Sleep(h.slowFor)
	}
	h.echoHandler.OnTraffic(s, b)
}

// TestScriptHandlerTimerSeesTakenAck: the ACK a handler's request
// carries is acted on after the handler's call (FastConsumer.Taken),
// but a timer that fires during the call acts on it first: a
// tail loss probe must not resend replies the request acknowledged.
// Two replies are in flight (the probe timeout is then 2·SRTT + 2 ms,
// about 42 ms after a 20 ms handshake), and the request that
// acknowledges both holds the handler 300 ms. Before, the probe resent
// the second reply during the call. netstack's fast path: the owned one
// has no tail loss probe.
func TestScriptHandlerTimerSeesTakenAck(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{HandshakeRTT: 20 * time.Millisecond, Config: netstackFastPath})
	connectHandler(t, p, &slowEchoHandler{slowFor: 300 * time.Millisecond})
	// The handshake's segments are counted: the stream exists.
	start := fastCounts(p.s.Stats())

	a, b := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 1000)
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: a})
	p.Expect(seg{Flags: "PA", Seq: 1, Ack: 1001, Payload: a})
	p.Send(seg{Flags: "PA", Seq: 1001, Ack: 1, Payload: b})
	p.Expect(seg{Flags: "PA", Seq: 1001, Ack: 2001, Payload: b})
	before := p.fastVerdicts(start, 2)
	p.Send(seg{Flags: "PA", Seq: 2001, Ack: 2001, Payload: []byte("slow")})
	// A pure ACK of the request may come first: the handler takes
	// longer than an ACK may wait.
	for {
		s, ok := p.next(scriptWait)
		if !ok {
			t.Fatal("no reply to the slow request")
		}
		if len(s.Payload) == 0 && s.Flags == "A" && s.Ack == 2005 {
			continue
		}
		if msg := mismatch(t, seg{Flags: "PA", Seq: 2001, Ack: 2005, Payload: []byte("slow")}, s); msg != "" {
			t.Fatalf("got %v before the reply: %s", s, msg)
		}
		break
	}
	if after := p.fastVerdicts(before, 1); after[tcp.FastHit] == before[tcp.FastHit] {
		t.Errorf("the fast path did not take the request (misses %v → %v)", before, after)
	}
}

// gatherEchoHandler echoes what arrives once it holds n bytes.
type gatherEchoHandler struct {
	echoHandler
	n   int
	buf []byte
}

func (h *gatherEchoHandler) OnTraffic(s *Stream, b []byte) {
	h.buf = append(h.buf, b...)
	if len(h.buf) >= h.n {
		s.Write(h.buf)
		h.buf = h.buf[:0]
	}
}

// TestScriptHandlerLateAckKeepsTSRecent: the ACK a request carries is
// acted on after the handler's reply, but the request's TSval is judged
// against the last ACK sent when it arrived (RFC 7323 §4.3: TS.Recent
// takes SEG.TSval only if SEG.SEQ ≤ Last.ACK.sent), not against the
// reply's. Two requests in one batch, the handler answering the second:
// the reply echoes the first's TSval, and TS.Recent stays at it, as
// with the fast path off. Before, the second's late ACK, judged against
// the reply, moved TS.Recent to its TSval.
func TestScriptHandlerLateAckKeepsTSRecent(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast", false: "nofastpath"}[fast], func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{Timestamps: true, HandshakeRTT: 20 * time.Millisecond, Config: func(c *Config) { c.Debug.NoFastPath = !fast }})
			ep := connectHandler(t, p, &gatherEchoHandler{n: 6})
			before := fastCounts(p.s.Stats())
			p.SendBatch(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("abc"), TSval: 50000},
				seg{Flags: "PA", Seq: 4, Ack: 1, Payload: []byte("def"), TSval: 50100})
			got := p.Expect(seg{Flags: "PA", Seq: 1, Ack: 7, Payload: []byte("abcdef")})
			if got.TSecr != 50000 {
				t.Errorf("the reply echoes TSval %d, want the first request's 50000", got.TSecr)
			}
			p.ExpectNothing(20 * time.Millisecond)
			if fs := ep.FastState(); fs.RecentTS != 50000 {
				t.Errorf("TS.Recent %d after the reply, want 50000", fs.RecentTS)
			}
			if fast {
				if hits := p.fastVerdicts(before, 2)[tcp.FastHit] - before[tcp.FastHit]; hits != 2 {
					t.Errorf("the fast path took %d of the 2 requests", hits)
				}
			}
		})
	}
}
