package stack

import (
	"io"
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
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("bye"))
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
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
		if st = mp.b.Stats(); st.TCPTimeWait+st.TCPTimeWaitOverflows == n && st.TCPTimeWait <= max {
			break
		}
	}
	if st.TCPTimeWait != max || st.TCPTimeWaitOverflows != n-max {
		t.Fatalf("server: %d in TIME-WAIT and %d closed without it, want %d and %d", st.TCPTimeWait, st.TCPTimeWaitOverflows, max, n-max)
	}
	if a := mp.a.Stats(); a.TCPTimeWait != 0 {
		t.Errorf("client (the passive closer) has %d connections in TIME-WAIT", a.TCPTimeWait)
	}
}
