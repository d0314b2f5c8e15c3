package stack

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestMemRequestAllocs: a request/response round trip allocates nothing
// anywhere — the request frame through the worker, netstack and the
// server's Read, the reply through Write, netstack and the TX ring, and
// the same on the client's side.
func TestMemRequestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	mp := newMemPair(t, Spin)
	c, srv := dialPair(t, mp, 17)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := srv.Read(buf)
			if err != nil {
				return
			}
			if _, err := srv.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	req, got := make([]byte, 64), make([]byte, 64)
	roundTrip := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ { // warm the pools
		roundTrip()
	}
	if n := testing.AllocsPerRun(2000, roundTrip); n > 0.01 {
		t.Fatalf("%.2f allocations per round trip, want 0", n)
	}
}

// TestMemConnSemantics checks the net.Conn contract where ustack's
// connection differs from a plain wrapper: deadlines, CloseWrite, and
// Close unblocking a Read.
func TestMemConnSemantics(t *testing.T) {
	mp := newMemPair(t, Spin)
	c, srv := dialPair(t, mp, 18)
	buf := make([]byte, 8)

	// A read deadline in the past fails at once, with a timeout.
	c.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past deadline: %v", err)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read past deadline: %v is not a timeout", err)
	}
	// A future deadline fires while the read waits.
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with deadline: %v", err)
	}
	// Clearing it lets data through again.
	c.SetReadDeadline(time.Time{})
	if _, err := srv.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(c, buf[:2]); err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("read after clearing the deadline: %q, %v", buf[:n], err)
	}

	// CloseWrite: the peer reads what was written, then EOF.
	if _, err := c.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(srv)
	if err != nil || string(got) != "bye" {
		t.Fatalf("peer read %q, %v after CloseWrite", got, err)
	}

	// Close unblocks a pending Read with net.ErrClosed.
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(buf) // srv has not closed its side
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read on a closed conn: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not unblock Read")
	}
	if _, err := c.Write(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write on a closed conn: %v", err)
	}
	if c.LocalAddr().String() != srv.RemoteAddr().String() {
		t.Fatalf("addresses: %v vs %v", c.LocalAddr(), srv.RemoteAddr())
	}
}

// TestMemDeadlineSetWhileWaiting: a connection makes its deadlines only
// when one is first set, and a Read or a Write already waiting then
// (without any deadline, so on none) still sees it pass, as the net
// package's connections do: net/http's server ends an idle connection's
// background read that way.
func TestMemDeadlineSetWhileWaiting(t *testing.T) {
	mp := newMemPair(t, Spin)
	c, srv := dialPair(t, mp, 19)
	tc := c.(*tcpConn)
	c.SetDeadline(time.Time{})
	if tc.rDeadline.p.Load() != nil || tc.wDeadline.p.Load() != nil {
		t.Fatal("clearing a deadline that was never set made one")
	}

	waitFor := func(what string, done <-chan error) {
		t.Helper()
		select {
		case err := <-done:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("%s: %v, want the deadline's error", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: a deadline set while it waited did not end it", what)
		}
	}

	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		read <- err
	}()
	time.Sleep(20 * time.Millisecond) // the Read waits, on no deadline
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	waitFor("read", read)

	// srv reads nothing: the write fills its window and c's send buffer.
	write := make(chan error, 1)
	go func() {
		_, err := c.Write(make([]byte, 64<<20))
		write <- err
	}()
	time.Sleep(50 * time.Millisecond)
	c.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
	waitFor("write", write)

	// Cleared, both work again.
	c.SetDeadline(time.Time{})
	srv.SetDeadline(time.Now().Add(10 * time.Second))
	go io.Copy(io.Discard, srv)
	if _, err := c.Write([]byte("again")); err != nil {
		t.Fatalf("write after clearing the deadline: %v", err)
	}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); !ok || a.Port != 19 || a.IP.To4() == nil {
		t.Fatalf("remote address %#v", c.RemoteAddr())
	}
}

// TestMemWorkerBusy: a spinning worker's busy time (QueueStats.WorkerBusy)
// grows with the work it does and not with the empty polls between.
func TestMemWorkerBusy(t *testing.T) {
	mp := newMemPair(t, Spin)
	c, srv := dialPair(t, mp, 20)
	busy := func() time.Duration {
		d, _ := mp.b.Stats().WorkerTime()
		return d
	}
	before, t0 := busy(), time.Now()
	time.Sleep(200 * time.Millisecond) // the worker spins on an empty ring
	if idle, el := busy()-before, time.Since(t0); idle > el/2 {
		t.Errorf("an idle worker counted %v busy in %v", idle, el)
	}
	before = busy()
	go io.Copy(srv, srv)
	buf := make([]byte, 64)
	for range 1000 {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	if d := busy() - before; d <= 0 {
		t.Errorf("1,000 echoed requests counted %v of the server's worker busy", d)
	}
	if _, kicks := mp.b.Stats().WorkerTime(); kicks <= 0 {
		t.Errorf("1,000 replies sent, the server's kicks took %v", kicks)
	}
}
