package stack

import (
	"context"
	"io"
	"net/netip"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedSYNFlood: hping3 floods a ustack listener with SYNs from
// the kernel host for 3 seconds, as fast as it can send (hping3 --flood,
// from a second address of the host's, source ports counting up), while a
// legitimate client connects and echoes every 100 ms from the host's
// first address. Every one of the
// legitimate client's connections must be served. netstack answers SYNs
// with a connection each until the listen backlog (4096) of half-open
// connections is full, and with SYN cookies beyond it; the flood's SYN
// rate is the limit, and frames the worker cannot take in time are
// dropped at the fill ring, the legitimate client's SYNs among them (it
// retransmits them after a second).
// floodIPv4 is the flood's source, a second address on the kernel host.
var floodIPv4 = netip.MustParseAddr("198.18.0.3")

func TestPrivilegedSYNFlood(t *testing.T) {
	vethtest.Tools(t, "hping3")
	p, s := newVethStack(t, vethtest.Options{}, Config{})
	ln, err := s.Listen("tcp", ":7")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	addr := netip.AddrPortFrom(ustack4.Addr(), 7)

	// The flood comes from an address of its own on the kernel host,
	// as from another machine: from the client's own address, its
	// source ports, counting up through all 65,536, sooner or later
	// reuse the one a legitimate connection has, and a SYN on that
	// connection's four-tuple while it was still being set up reset it
	// (about one run in seven).
	run(t, "ip", "-n", p.Kernel.Namespace, "addr", "add", floodIPv4.String()+"/24", "dev", p.Kernel.Link)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	flood := exec.CommandContext(ctx, "hping3", "-q", "-S", "--flood", "-a", floodIPv4.String(), "-p", "7", addr.Addr().String())
	if err := p.Kernel.Do(flood.Start); err != nil {
		t.Fatal(err)
	}
	floodDone := make(chan struct{})
	go func() { flood.Wait(); close(floodDone) }()
	defer func() { cancel(); <-floodDone }()

	var times []time.Duration
	failed := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		t0 := time.Now()
		err := func() error {
			c, err := kernelDial(context.Background(), p, "tcp4", addr.String())
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			msg := []byte("legitimate")
			if _, err := c.Write(msg); err != nil {
				return err
			}
			_, err = io.ReadFull(c, msg)
			return err
		}()
		if err != nil {
			failed++
			t.Errorf("legitimate connection during the flood: %v", err)
			continue
		}
		times = append(times, time.Since(t0))
	}
	<-floodDone
	st := s.Stats()
	var fillEmpty uint64
	for _, q := range st.Queues {
		fillEmpty += q.XSK.FillRingEmpty
	}
	if len(times) == 0 {
		t.Fatal("no legitimate connection was served")
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	t.Logf("legitimate connections: %d served, %d failed; connect+echo p50 %v, max %v; ustack received %d TCP segments, dropped %d frames at the fill ring",
		len(times), failed, times[len(times)/2].Round(time.Microsecond), times[len(times)-1].Round(time.Microsecond), st.TCPSegmentsReceived, fillEmpty)
	if st.TCPSegmentsReceived < 10000 {
		t.Errorf("only %d TCP segments reached ustack: the flood did not flood", st.TCPSegmentsReceived)
	}
}
