package reflector_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedFloorTCP is floor-floor-tcp: a TCPConn against a Floor in
// Fresh mode echoes segments up to the MTU's, every echo from a fresh
// frame with valid checksums both ways; a Read cut short returns the
// rest of the segment next; a write larger than a segment is refused;
// round trips allocate nothing at either end. A kernel TCP client
// against the same floor gets its handshake, data and close answered.
func TestPrivilegedFloorTCP(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{})
	const port = 7000
	f := startFloor(t, p, reflector.FloorConfig{Port: port, Fresh: true})
	floorAddr := netip.AddrPortFrom(vethtest.UstackIPv4, port)

	t0 := time.Now()
	var c *reflector.TCPConn
	if err := p.Kernel.Do(func() (err error) {
		c, err = reflector.DialTCP(p.Kernel.Link, netip.MustParseAddrPort("198.18.0.20:40000"), floorAddr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	for i, size := range []int{1, 64, 1024, reflector.MaxSegment(1500)} {
		msg := bytes.Repeat([]byte{byte(i + 1)}, size)
		if n, err := c.Write(msg); err != nil || n != size {
			t.Fatalf("write %d bytes: %d, %v", size, n, err)
		}
		if n, err := c.Read(buf); err != nil || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("echo of %d bytes: %d bytes back, %v", size, n, err)
		}
	}
	msg := make([]byte, 1000)
	for i := range msg {
		msg[i] = byte(i)
	}
	c.Write(msg)
	var back []byte
	for len(back) < len(msg) {
		n, err := c.Read(buf[:400])
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, buf[:n]...)
	}
	if !bytes.Equal(back, msg) {
		t.Error("an echo read in pieces differs")
	}
	if _, err := c.Write(make([]byte, reflector.MaxSegment(1500)+1)); err == nil {
		t.Error("a segment larger than the MTU's was written")
	}
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(buf); err == nil {
		t.Error("read a reply to nothing")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	// Counted from the runtime's statistics, not AllocsPerRun: that
	// runs with GOMAXPROCS 1, where the client and the spinning floor
	// take turns at the scheduler's preemption tick.
	small := make([]byte, 64)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 200 {
		if _, err := c.Write(small); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&m1)
	if a := m1.Mallocs - m0.Mallocs; a > 10 {
		t.Errorf("%d allocations in 200 round trips (client and floor)", a)
	}
	if copied := f.Copied.Load(); copied != 4+1+200 || f.BadChecksums.Load() != 0 || c.BadChecksums.Load() != 0 {
		t.Errorf("%d echoes from fresh frames, want 205; bad checksums: floor %d, client %d", copied, f.BadChecksums.Load(), c.BadChecksums.Load())
	}

	t.Logf("TCPConn: %v", time.Since(t0))
	t0 = time.Now()

	// A kernel client: the handshake is answered in place, its data
	// (without timestamps, which the floor's SYN-ACK does not offer)
	// from fresh frames, up to nearly the 64 KiB windows.
	var tc net.Conn
	if err := p.Kernel.Do(func() (err error) {
		tc, err = (&net.Dialer{}).DialContext(context.Background(), "tcp", floorAddr.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	before := f.Copied.Load()
	for i, size := range []int{1, 64, 1460, 8192, 60_000} {
		msg := make([]byte, size)
		for j := range msg {
			msg[j] = byte(i*31 + j*7)
		}
		go tc.Write(msg)
		back := make([]byte, size)
		if _, err := io.ReadFull(tc, back); err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("kernel client, TCP echo of %d bytes: %v, equal %v", size, err, bytes.Equal(back, msg))
		}
	}
	t.Logf("kernel client: %v", time.Since(t0))
	if f.Copied.Load()-before < 5 {
		t.Errorf("%d of the kernel client's segments echoed from fresh frames", f.Copied.Load()-before)
	}
	tc.(*net.TCPConn).CloseWrite()
	if n, err := tc.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("after our FIN: %d bytes, %v; want the floor's FIN", n, err)
	}
}
