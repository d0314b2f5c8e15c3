package stack

import (
	"context"
	"io"
	"math"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// countingClock is the system clock, counting netstack's monotonic reads.
type countingClock struct {
	tcpip.Clock
	reads atomic.Int64
}

func (c *countingClock) NowMonotonic() tcpip.MonotonicTime {
	c.reads.Add(1)
	return c.Clock.NowMonotonic()
}

// TestMemClockReadsPerRoundTrip: netstack reads its clock at most
// maxReads times per 64-byte request and reply, both ends together. A
// read costs 40–70 ns on a VM. Upstream read it 26 times per round trip
// here: twice when arming the loss-probe timer, twice for each data
// segment sent, once more for the segment's queueing and once for the
// delayed ACK's timer; netstack patch 0074 reads once for each of the
// first two and not at all for the last two (16 reads).
func TestMemClockReadsPerRoundTrip(t *testing.T) {
	// Between 16 (now) and 26 (upstream): timers that fire add reads on a
	// slow run (17.1 under the race detector).
	const maxReads = 21.0
	clk := &countingClock{Clock: tcpip.NewStdClock()}
	withClock := func(c *Config) { c.clock = clk }
	mp := newMemPairCfg(t, Spin, withClock, withClock)
	ln, err := mp.b.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echo(t, ln)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mp.a.DialContext(ctx, "tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg, buf := make([]byte, 64), make([]byte, 64)
	round := func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ { // past slow start and the first RTT samples
		round()
	}
	const rounds = 2000
	before := clk.reads.Load()
	for i := 0; i < rounds; i++ {
		round()
	}
	per := float64(clk.reads.Load()-before) / rounds
	t.Logf("%.2f clock reads per round trip", per)
	if per > maxReads {
		t.Errorf("%.2f clock reads per round trip, want at most %.0f", per, maxReads)
	}
}

// TestMonotonicTimeArithmetic: MonotonicTime's Add and Sub (netstack
// patch 0074: int64 arithmetic) give what upstream's time.Time arithmetic
// gave, saturation at both ends included.
func TestMonotonicTimeArithmetic(t *testing.T) {
	ns := func(m tcpip.MonotonicTime) int64 {
		n, err := strconv.ParseInt(m.String(), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	at := func(n int64) tcpip.MonotonicTime { return tcpip.MonotonicTime{}.Add(time.Duration(n)) }
	vals := []int64{math.MinInt64, math.MinInt64 + 1, -1e18, -3e9, -1, 0, 1, 3e9, 1e18, math.MaxInt64 - 1, math.MaxInt64}
	for _, a := range vals {
		if got := ns(at(a)); got != a {
			t.Fatalf("0 + %d = %d", a, got)
		}
		for _, b := range vals {
			wantAdd := time.Unix(0, a).Add(time.Duration(b)).Sub(time.Unix(0, 0)).Nanoseconds()
			if got := ns(at(a).Add(time.Duration(b))); got != wantAdd {
				t.Errorf("%d + %d = %d, want %d", a, b, got, wantAdd)
			}
			wantSub := time.Unix(0, a).Sub(time.Unix(0, b))
			if got := at(a).Sub(at(b)); got != wantSub {
				t.Errorf("%d - %d = %d, want %d", a, b, got, wantSub)
			}
		}
	}
}
