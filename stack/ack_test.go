package stack

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// frameCounter counts the TCP segments one side transmits (a memEnd
// mangle hook), split into data segments and pure ACKs.
type frameCounter struct {
	mu             sync.Mutex
	data, pureACKs int
	lastAck        uint32
}

func (c *frameCounter) frame(f []byte) {
	if len(f) < ethHeaderLen+header.IPv4MinimumSize || header.Ethernet(f).Type() != header.IPv4ProtocolNumber {
		return
	}
	ip := header.IPv4(f[ethHeaderLen:])
	if ip.TransportProtocol() != header.TCPProtocolNumber {
		return
	}
	tcp := header.TCP(ip.Payload())
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(tcp.Payload()) > 0:
		c.data++
	case tcp.Flags() == header.TCPFlagAck:
		c.pureACKs++
	}
	if tcp.Flags().Contains(header.TCPFlagAck) {
		c.lastAck = tcp.AckNumber()
	}
}

func (c *frameCounter) get() (data, pureACKs int, lastAck uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data, c.pureACKs, c.lastAck
}

// dialPair connects A to a listener on B and returns both ends.
func dialPair(t testing.TB, mp *memPair, port uint16) (client, server net.Conn) {
	t.Helper()
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), port).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), port).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// TestMemAckRidesReply: in request/response traffic the ACK a request is
// owed leaves with the reply, so the server sends one frame per request
// and no pure ACK. The delayed-ACK timeout is set far above any scheduling
// delay so that the count does not depend on timing. Upstream netstack
// acknowledges every processed batch at once: two frames per request.
func TestMemAckRidesReply(t *testing.T) {
	mp := newMemPairWith(t, Spin, func(c *Config) { c.DelayedAck = 400 * time.Millisecond })
	count := &frameCounter{}
	c, srv := dialPair(t, mp, 12)
	go io.Copy(srv, srv) // echo
	// The handshake's last ACK is A's; start counting B's frames now.
	mp.pb.setMangle(count.frame)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	const rounds = 200
	req, got := bytes.Repeat([]byte{'q'}, 64), make([]byte, 64)
	for i := 0; i < rounds; i++ {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	data, pure, _ := count.get()
	t.Logf("server sent %d data segments and %d pure ACKs for %d requests", data, pure, rounds)
	if data != rounds || pure != 0 {
		t.Fatalf("server sent %d data segments and %d pure ACKs for %d requests, want %d and 0", data, pure, rounds, rounds)
	}
}

// TestMemDelayedAckFires: data that no reply follows is still
// acknowledged, by a pure ACK once the delayed-ACK timer fires.
func TestMemDelayedAckFires(t *testing.T) {
	mp := newMemPairWith(t, Spin, func(c *Config) { c.DelayedAck = 20 * time.Millisecond })
	count := &frameCounter{}
	c, srv := dialPair(t, mp, 13)
	mp.pb.setMangle(count.frame)
	go io.Copy(io.Discard, srv) // reads, never replies
	if _, err := c.Write([]byte("no reply to this")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, pure, _ := count.get()
		if pure == 1 {
			break
		}
		if pure > 1 || time.Now().After(deadline) {
			t.Fatalf("server sent %d pure ACKs for one unanswered segment, want 1", pure)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMemBulkAckedEverySecondSegment: a one-way transfer is acknowledged
// as it arrives, at least once per two full-sized segments' worth of a
// received batch, never held for the delayed-ACK timeout, so a sender
// limited by its buffer is not slowed to one buffer per timeout.
func TestMemBulkAckedEverySecondSegment(t *testing.T) {
	mp := newMemPairWith(t, Spin, func(c *Config) { c.DelayedAck = 400 * time.Millisecond })
	count := &frameCounter{}
	c, srv := dialPair(t, mp, 14)
	mp.pb.setMangle(count.frame)
	done := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, srv)
		done <- n
	}()
	// 8 MiB through 1 MiB buffers: if ACKs waited 400 ms for the timer
	// this would take many seconds; acknowledged as it arrives it takes
	// well under one on any machine, so 60 s bounds only a hang.
	const size = 8 << 20
	c.SetDeadline(time.Now().Add(60 * time.Second))
	start := time.Now()
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := <-done; n != size {
		t.Fatalf("received %d of %d bytes", n, size)
	}
	_, pure, _ := count.get()
	t.Logf("8 MiB in %v with %d pure ACKs", time.Since(start), pure)
	// Without ACKs for every second segment the sender would stall for
	// the timer once its 1 MiB window is out: at most 16 such ACKs.
	if pure < 32 {
		t.Fatalf("only %d pure ACKs for 8 MiB: acknowledgements were held for the timer", pure)
	}
}

// TestMemInlineProcessing: the worker processes the TCP segments of each
// RX batch itself (the PacketBuffer's Deferrer). Almost every request of a ping-pong is
// processed inline on the server's worker; the exception is a request
// that arrives while the application still holds its connection's lock
// (finishing its previous Write), which goes to the processor goroutine
// by design. With Config.Debug.HandOffTCP none is.
func TestMemInlineProcessing(t *testing.T) {
	for _, handOff := range []bool{false, true} {
		mp := newMemPairWith(t, Spin, func(c *Config) { c.Debug.HandOffTCP = handOff })
		c, srv := dialPair(t, mp, 15)
		go io.Copy(srv, srv)
		before := mp.b.Stats().Queues[0].RxInline
		c.SetDeadline(time.Now().Add(20 * time.Second))
		const rounds = 100
		buf := make([]byte, 64)
		for i := 0; i < rounds; i++ {
			if _, err := c.Write(buf); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
		}
		n := mp.b.Stats().Queues[0].RxInline - before
		if !handOff && n < rounds*9/10 || handOff && n != 0 {
			t.Fatalf("HandOffTCP=%v: %d of %d requests processed on the worker", handOff, n, rounds)
		}
	}
}

// TestMemTrace: with Config.Trace, a ping-pong records every stage of
// each sampled request once, in path order; about one request in
// TraceSample is sampled.
func TestMemTrace(t *testing.T) {
	mp := newMemPairWith(t, Spin, func(c *Config) { c.Trace = true })
	if mp.a.Stats().Trace != nil {
		t.Fatal("tracing is on for a stack that did not ask for it")
	}
	c, srv := dialPair(t, mp, 16)
	go io.Copy(srv, srv)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 64)
	const rounds = 850
	for i := 0; i < rounds; i++ {
		if i == 50 {
			mp.b.ResetTrace() // after a warm-up
		}
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	tr := mp.b.Stats().Trace
	if tr == nil || len(tr.Stages) != int(numStages) {
		t.Fatalf("trace: %+v", tr)
	}
	var prev time.Duration
	sampled := tr.Stages[0].Count
	// Each request is one RX batch at least (more if an ACK comes alone).
	if most := uint64(rounds-50)/TraceSample + 1; sampled < most/3 || sampled > most {
		t.Errorf("%d requests sampled of %d, want about one in %d", sampled, rounds-50, TraceSample)
	}
	for _, s := range tr.Stages {
		t.Logf("%-13v n=%d p50 %v p90 %v p99 %v", s.Stage, s.Count, s.P50, s.P90, s.P99)
		// A request can slip past the stage it was in at the reset, so
		// allow one.
		if s.Count+1 < sampled || s.Count > sampled+1 {
			t.Errorf("%v recorded %d times for %d sampled requests", s.Stage, s.Count, sampled)
		}
		if s.P50 < prev {
			t.Errorf("%v p50 %v before the previous stage's %v", s.Stage, s.P50, prev)
		}
		prev = s.P50
	}
}
