package stack

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestMemTimeWaitBounded: connections the server closes first wait in
// TIME-WAIT up to Config.MaxTimeWait; the rest close without it and are
// counted, so a server under connection churn holds a bounded number of
// closed endpoints.
func TestMemTimeWaitBounded(t *testing.T) {
	const max, n = 8, 20
	mp := newMemPairWith(t, Spin, func(c *Config) { c.MaxTimeWait = max })
	// A listener per connection: the client draws each ephemeral port
	// at random (from 49,536), and a SYN that repeats a connection's
	// four-tuple while the server holds it in TIME-WAIT ends that
	// TIME-WAIT early (netstack's handleTimeWaitSegment: a new SYN),
	// which neither count records; the wait below then ran out (CI,
	// once). Distinct server ports make every four-tuple distinct.
	for i := 0; i < n; i++ {
		ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), uint16(7000+i)).String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		acceptEach(ln, func(c net.Conn) {
			c.Write([]byte("bye"))
			c.Close()
		})
	}
	for i := 0; i < n; i++ {
		c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), uint16(7000+i)).String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil || string(b) != "bye" {
			t.Fatalf("connection %d read %q, %v", i, b, err)
		}
		c.Close()
	}
	// The last FIN/ACK exchanges finish on the workers. A connection
	// entering TIME-WAIT is counted there before the bound sends it on
	// (as an overflow): a snapshot in between reads max+1 and one
	// overflow short, so wait for a count within the bound.
	var st Stats
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st = mp.b.Stats(); st.TCP.TimeWait+st.TCP.TimeWaitOverflows == n && st.TCP.TimeWait <= max {
			break
		}
	}
	if st.TCP.TimeWait != max || st.TCP.TimeWaitOverflows != n-max {
		t.Fatalf("server: %d in TIME-WAIT and %d closed without it, want %d and %d", st.TCP.TimeWait, st.TCP.TimeWaitOverflows, max, n-max)
	}
	if a := mp.a.Stats(); a.TCP.TimeWait != 0 {
		t.Errorf("client (the passive closer) has %d connections in TIME-WAIT", a.TCP.TimeWait)
	}
}
