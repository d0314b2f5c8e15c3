package qp

import (
	"bytes"
	"hash/crc32"
	"net"
	"sync"
	"testing"

	"github.com/ustack-dev/ustack/capability"
)

// lendConn is a connection that takes lent writes
// (capability.LendWriter) and, like ustack's, holds the lent bytes after
// writing them: here until four more lends have come, then it checks
// they never changed and releases them.
type lendConn struct {
	net.Conn
	t        testing.TB
	mu       sync.Mutex
	held     []lentWrite
	lends    int
	releases int
}

var _ capability.LendWriter = (*lendConn)(nil)

type lentWrite struct {
	b   []byte
	sum uint32
	l   interface{ Release() }
}

func (c *lendConn) lend(b []byte, l interface{ Release() }) (int, error) {
	n, err := c.Conn.Write(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lends++
	c.held = append(c.held, lentWrite{b[:n], crc32.ChecksumIEEE(b[:n]), l})
	for len(c.held) > 4 {
		c.releaseLocked()
	}
	return n, err
}

func (c *lendConn) releaseLocked() {
	x := c.held[0]
	c.held = c.held[1:]
	if crc32.ChecksumIEEE(x.b) != x.sum {
		c.t.Error("the queue pair changed lent bytes before they were released")
	}
	c.releases++
	x.l.Release()
}

func (c *lendConn) WriteLent(b []byte, l interface{ Release() }) (int, error) {
	return c.lend(b, l)
}

func (c *lendConn) TryWriteLent(b []byte, l interface{ Release() }) (int, error) {
	return c.lend(b, l)
}

func (c *lendConn) Close() error {
	c.mu.Lock()
	for len(c.held) > 0 {
		c.releaseLocked()
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

// TestLentTransmitBuffer: over a connection that reads lent bytes in
// place (ustack's), the queue pair lends its transmit buffer for large
// writes, never rewrites a lent byte before the connection releases it,
// and takes a free buffer back once released; small messages are copied.
func TestLentTransmitBuffer(t *testing.T) {
	var lc *lendConn
	a, b := newPair(t, pairOpts{dial: func(t testing.TB) (net.Conn, net.Conn) {
		ca, cb := tcpConns(t)
		lc = &lendConn{Conn: ca, t: t}
		return lc, cb
	}})
	const rounds = 40
	for i := 0; i < rounds; i++ {
		fill(a.buf, byte(i))
		// Four Writes of 16 KiB in a list: one lent write of 64 KiB.
		var wrs []SendWR
		for k := 0; k < 4; k++ {
			wrs = append(wrs, SendWR{ID: uint64(i*4 + k), Op: WRWrite, Flags: Signaled,
				SGL:       []SGE{{Offset: uint64(k) << 14, Len: 16 << 10, Key: a.mr.Key()}},
				RemoteKey: b.mr.Key(), RemoteOffset: uint64(k) << 14})
		}
		post(t, a.qp, wrs...)
		for k := 0; k < 4; k++ {
			waitOK(t, a.scq, uint64(i*4+k), WCWrite)
		}
		// A small message: copied, not lent.
		post(t, a.qp, SendWR{ID: 1 << 20, Op: WRWrite, Flags: Signaled | Inline, Inline: []byte{byte(i)},
			RemoteKey: b.mr.Key(), RemoteOffset: 64<<10 - 1})
		waitOK(t, a.scq, 1<<20, WCWrite)
	}
	// A Send lands after every Write before it.
	postRecv(t, b.qp, RecvWR{ID: 7})
	post(t, a.qp, SendWR{ID: 8, Op: WRSend, Flags: Signaled})
	waitOK(t, a.scq, 8, WCSend)
	waitOK(t, b.rcq, 7, WCRecv)
	want := append([]byte(nil), a.buf[:64<<10-1]...)
	if !bytes.Equal(b.buf[:64<<10-1], want) || b.buf[64<<10-1] != rounds-1 {
		t.Fatal("the peer's memory does not hold the last round's data")
	}
	lc.mu.Lock()
	lends, releases := lc.lends, lc.releases
	lc.mu.Unlock()
	if lends < rounds || lends > rounds*2 {
		t.Errorf("%d lent writes for %d rounds of 64 KiB and %d small messages", lends, rounds, rounds)
	}
	if releases < lends-4 {
		t.Errorf("%d of %d lends released", releases, lends)
	}
	a.qp.txFreeMu.Lock()
	free := len(a.qp.txFree)
	a.qp.txFreeMu.Unlock()
	// Four lends held, each of 64 KiB of a 278 KB buffer: about two
	// buffers out, and what came back is reused, not piled up.
	if free > 3 {
		t.Errorf("%d free transmit buffers: released ones are not reused", free)
	}
}
