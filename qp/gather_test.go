package qp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedConn, once gated, holds its reads until open is closed: a peer
// that stops reading, so that the sender's socket fills.
type gatedConn struct {
	net.Conn
	gated atomic.Bool
	open  chan struct{}
}

func (c *gatedConn) Read(b []byte) (int, error) {
	if c.gated.Load() {
		<-c.open
	}
	return c.Conn.Read(b)
}

// TestGatheredWritesWhenSocketIsFull sends large Writes over a kernel
// socket, which go out gathered from the registered region, while the
// peer does not read: the socket takes part of a writev, the rest is
// copied into the transmit buffer and written when the peer reads
// again. Every Write must land whole and in order.
func TestGatheredWritesWhenSocketIsFull(t *testing.T) {
	open := make(chan struct{})
	var opened bool
	defer func() {
		if !opened {
			close(open)
		}
	}()
	var gate *gatedConn
	a, b := newPair(t, pairOpts{dial: func(t testing.TB) (net.Conn, net.Conn) {
		ca, cb := tcpConns(t)
		// Small socket buffers fill with a few Writes.
		ca.(*net.TCPConn).SetWriteBuffer(64 << 10)
		cb.(*net.TCPConn).SetReadBuffer(64 << 10)
		gate = &gatedConn{Conn: cb, open: open}
		return ca, gate
	}})
	gate.gated.Store(true)
	// The sink: a region of its own on b, a Write's bytes at their own
	// offset.
	const size, writes = 20 << 10, 48
	sink := make([]byte, size*writes)
	smr, err := b.pd.RegMR(sink, LocalWrite|RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	fill(a.buf, 7)
	src := func(i int) uint64 { return uint64(i*997) % uint64(len(a.buf)-size) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < writes; i++ {
			wr := SendWR{ID: uint64(i), Op: WRWrite, SGL: []SGE{{src(i), size, a.mr.Key()}}, RemoteKey: smr.Key(), RemoteOffset: uint64(i * size)}
			if i == writes-1 {
				wr.Flags = Signaled
			}
			if _, err := a.qp.PostSend([]SendWR{wr}); err != nil {
				t.Errorf("PostSend %d: %v", i, err)
				return
			}
		}
	}()
	// The socket leaves part of a gathered write: PostSend then waits
	// for room.
	deadline := time.Now().Add(5 * time.Second)
	for a.qp.gatherRest.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no gathered write was cut short by a full socket")
		}
		time.Sleep(time.Millisecond)
	}
	opened = true
	close(open)
	<-done
	waitOK(t, a.scq, writes-1, WCWrite)
	// A Send after the Writes arrives after them.
	postRecv(t, b.qp, RecvWR{ID: 9})
	post(t, a.qp, SendWR{ID: 100, Op: WRSend})
	waitOK(t, b.rcq, 9, WCRecv)
	for i := 0; i < writes; i++ {
		if !bytes.Equal(sink[i*size:(i+1)*size], a.buf[src(i):src(i)+size]) {
			t.Fatalf("Write %d landed wrong", i)
		}
	}
	if a.qp.gathers.Load() < writes {
		t.Fatalf("%d gathered writes, want at least %d", a.qp.gathers.Load(), writes)
	}
}

// recordConn keeps a copy of what is read through it once on.
type recordConn struct {
	net.Conn
	on  atomic.Bool
	mu  sync.Mutex
	buf []byte
}

func (c *recordConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.on.Load() {
		c.mu.Lock()
		c.buf = append(c.buf, b[:n]...)
		c.mu.Unlock()
	}
	return n, err
}

func (c *recordConn) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// TestGatheredListKeepsOrder posts one list that mixes gathered Writes
// from seven regions (more than one writev holds) with small messages
// that go through the transmit buffer: everything must arrive in order
// and whole.
func TestGatheredListKeepsOrder(t *testing.T) {
	var rc *recordConn
	a, b := newPair(t, pairOpts{dial: func(t testing.TB) (net.Conn, net.Conn) {
		ca, cb := tcpConns(t)
		rc = &recordConn{Conn: cb}
		return ca, rc
	}})
	rc.on.Store(true)
	const size = 20 << 10
	var srcs [7]*MR
	for i := range srcs {
		buf := make([]byte, size)
		fill(buf, byte(20+i))
		mr, err := a.pd.RegMR(buf, LocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		srcs[i] = mr
	}
	sink := make([]byte, len(srcs)*size)
	smr, err := b.pd.RegMR(sink, LocalWrite|RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	fill(a.buf, 3)
	postRecv(t, b.qp, RecvWR{ID: 1, SGL: []SGE{{0, 100, b.mr.Key()}}}, RecvWR{ID: 2, SGL: []SGE{{100, 100, b.mr.Key()}}})
	var wrs []SendWR
	for i, mr := range srcs {
		wrs = append(wrs, SendWR{ID: uint64(10 + i), Op: WRWrite, SGL: []SGE{{0, size, mr.Key()}}, RemoteKey: smr.Key(), RemoteOffset: uint64(i * size)})
		if i == 1 {
			// A Send between the Writes: the receiver's completion for
			// it must come after the first two Writes landed.
			wrs = append(wrs, SendWR{ID: 20, Op: WRSend, SGL: []SGE{{0, 100, a.mr.Key()}}})
		}
	}
	wrs = append(wrs, SendWR{ID: 21, Op: WRSend, Flags: Signaled, SGL: []SGE{{100, 100, a.mr.Key()}}})
	g := a.qp.gathers.Load()
	post(t, a.qp, wrs...)
	waitOK(t, a.scq, 21, WCSend)
	waitOK(t, b.rcq, 1, WCRecv)
	waitOK(t, b.rcq, 2, WCRecv)
	for i, mr := range srcs {
		if !bytes.Equal(sink[i*size:(i+1)*size], mr.Buf()) {
			t.Fatalf("Write %d landed wrong", i)
		}
	}
	if !bytes.Equal(b.buf[:200], a.buf[:200]) {
		t.Fatal("the Sends landed wrong")
	}
	// On the wire: the messages in the order posted, each whole.
	var got []string
	stream := rc.bytes()
	for len(stream) > 0 {
		l := fpduLen(int(binary.BigEndian.Uint16(stream)))
		u, err := checkFPDU(stream[:l])
		if err != nil {
			t.Fatal(err)
		}
		sg, err := parseSegment(u)
		if err != nil {
			t.Fatal(err)
		}
		if sg.last {
			got = append(got, fmt.Sprintf("%v@%d", sg.op, sg.to))
		}
		stream = stream[l:]
	}
	var want []string
	for _, wr := range wrs {
		op, to := OpWrite, int(wr.RemoteOffset)+size-size%maxPayload(DefaultQPConfig(nil, nil).MaxFPDU, taggedHdrLen)
		if wr.Op == WRSend {
			op, to = OpSend, 0
		}
		want = append(want, fmt.Sprintf("%v@%d", op, to))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("messages on the wire:\n%v\nwant\n%v", got, want)
	}
	// The Send in the middle wrote what was gathered before it; of the
	// five Writes after it, the fifth region's needed a writev of its
	// own.
	if d := a.qp.gathers.Load() - g; d < 3 {
		t.Fatalf("%d gathered writes, want at least 3", d)
	}
	for _, mr := range srcs {
		if err := mr.Dereg(); err != nil { // no lock left held
			t.Fatal(err)
		}
	}
}
