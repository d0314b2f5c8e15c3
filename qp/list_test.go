package qp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

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

// TestPostedListKeepsOrder posts one list that mixes large Writes from
// seven regions with small Sends: everything must arrive in order and
// whole, each message's FPDUs together.
func TestPostedListKeepsOrder(t *testing.T) {
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
	for _, mr := range srcs {
		if err := mr.Dereg(); err != nil { // no lock left held
			t.Fatal(err)
		}
	}
}
