package stack

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/stack/internal/faultio"
)

// newFaultPair is newMemPair with a Faults configuration on each end
// (nil: none).
func newFaultPair(t testing.TB, fa, fb *Faults) *memPair {
	t.Helper()
	pa, pb, err := newMemWire(1024, 2048)
	if err != nil {
		t.Fatal(err)
	}
	mp := &memPair{pa: pa, pb: pb, ownA: &fakeOwner{ports: map[portKey]bool{}}, ownB: &fakeOwner{ports: map[portKey]bool{}}}
	mk := func(p *memEnd, addrs []netip.Prefix, mac net.HardwareAddr, own *fakeOwner, f *Faults) *Stack {
		cfg := Config{Interface: "mem", Addrs: addrs, Poll: Adaptive, Faults: f}
		cfg.setDefaults()
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		s, err := newStack(cfg, []frameIO{p}, linkInfo{mtu: 1500, mac: mac}, own)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	mp.a = mk(pa, []netip.Prefix{memA4, memA6}, net.HardwareAddr{2, 0, 0, 0, 1, 1}, mp.ownA, fa)
	mp.b = mk(pb, []netip.Prefix{memB4, memB6}, net.HardwareAddr{2, 0, 0, 0, 1, 2}, mp.ownB, fb)
	return mp
}

// checkFrames closes both stacks and checks that every frame of the wire
// and of the fault injectors' own pools is back where it belongs.
func checkFrames(t *testing.T, mp *memPair) {
	t.Helper()
	mp.a.Close()
	mp.b.Close()
	for _, e := range []struct {
		name       string
		end, other *memEnd
		s          *Stack
	}{{"A", mp.pa, mp.pb, mp.a}, {"B", mp.pb, mp.pa, mp.b}} {
		if n := e.end.wireFrames(e.other); n != 1024 {
			t.Errorf("%s: %d of 1024 TX frames accounted for", e.name, n)
		}
		for _, f := range e.s.mw.faults {
			if n := f.OwnFramesOut(); n != 0 {
				t.Errorf("%s: fault injector holds %d of its %d RX frames", e.name, n, faultio.OwnFrames)
			}
		}
	}
}

// echoTransfer sends size seeded random bytes from A to B's echo server
// and reads them back, checking SHA-256 both ways. It returns the bytes
// moved (both directions).
func echoTransfer(t *testing.T, mp *memPair, size int, timeout time.Duration) int {
	t.Helper()
	ln, err := mp.b.Listen("tcp", ":7")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The server hashes what it receives before echoing it.
	srvSum := make(chan [sha256.Size]byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s, _, _ := sink(io.TeeReader(c, c))
		srvSum <- s
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := mp.a.DialContext(ctx, "tcp", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(uint64(size), 1))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	want := sha256.Sum256(data)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(interface{ CloseWrite() error }).CloseWrite()
		}
		errc <- err
	}()
	got, n, err := sink(c)
	if err != nil {
		t.Fatalf("echo read after %d bytes: %v\nA %+v\nB %+v", n, err, mp.a.Stats(), mp.b.Stats())
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n != int64(size) {
		t.Fatalf("echoed %d bytes, want %d", n, size)
	}
	if got != want {
		t.Fatal("echoed data differs (SHA-256)")
	}
	select {
	case s := <-srvSum:
		if s != want {
			t.Fatal("server received data that differs (SHA-256)")
		}
	case <-time.After(timeout):
		t.Fatal("server did not finish")
	}
	return 2 * size
}

// TestMemFaultsIntegrity echoes data between two stacks over the memory
// wire with faults injected at both ends in both directions, one fault
// type at a time and then all together, and checks SHA-256 of what each
// end received, that the faults were injected, that corrupted frames were
// all caught by the checksum check, and that no frame leaked.
func TestMemFaultsIntegrity(t *testing.T) {
	const size = 1 << 20
	for _, tc := range []struct {
		name  string
		rates FaultRates
	}{
		// Rates per end and direction: a frame meets the sender's TX
		// faults and the receiver's RX faults, so the wire's rate is
		// about twice these.
		{"drop2", FaultRates{Drop: 0.02}},
		{"corrupt2", FaultRates{Corrupt: 0.02}},
		{"duplicate2", FaultRates{Duplicate: 0.02}},
		{"reorder2", FaultRates{Reorder: 0.02}},
		{"delay2", FaultRates{Delay: 0.02, DelayTime: 2 * time.Millisecond}},
		{"all1", FaultRates{Drop: 0.01, Corrupt: 0.01, Duplicate: 0.01, Reorder: 0.01, Delay: 0.01}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fa := &Faults{Seed: 1, RX: tc.rates, TX: tc.rates}
			fb := &Faults{Seed: 2, RX: tc.rates, TX: tc.rates}
			mp := newFaultPair(t, fa, fb)
			moved := echoTransfer(t, mp, size, 90*time.Second)
			sa, sb := mp.a.Stats(), mp.b.Stats()
			var injected FaultStats
			var badSum, malformed uint64
			for _, st := range []Stats{sa, sb} {
				q := st.Queues[0]
				for _, f := range []FaultStats{q.FaultsRX, q.FaultsTX} {
					injected.Dropped += f.Dropped
					injected.Corrupted += f.Corrupted
					injected.Duplicated += f.Duplicated
					injected.Reordered += f.Reordered
					injected.Delayed += f.Delayed
				}
				badSum += q.RxBadChecksum
				// A corrupted TCP segment is caught by the worker's
				// check; one whose IP version or length field was hit
				// is not IPv4 to the worker and is dropped by netstack's
				// IP layer as malformed (counted there).
				if st.TCP.ChecksumErrors != 0 {
					t.Errorf("netstack saw %d TCP checksum errors: corruption got past the worker", st.TCP.ChecksumErrors)
				}
				malformed += st.IP.Malformed
			}
			r := tc.rates
			for _, c := range []struct {
				rate float64
				n    uint64
				what string
			}{{r.Drop, injected.Dropped, "dropped"}, {r.Corrupt, injected.Corrupted, "corrupted"}, {r.Duplicate, injected.Duplicated, "duplicated"}, {r.Reorder, injected.Reordered, "reordered"}, {r.Delay, injected.Delayed, "delayed"}} {
				if (c.rate > 0) != (c.n > 0) {
					t.Errorf("%d frames %s at rate %v", c.n, c.what, c.rate)
				}
			}
			// Every corrupted frame is dropped by some check; the
			// data's hash proves none was delivered.
			if r.Corrupt > 0 && badSum == 0 {
				t.Errorf("%d frames corrupted, none caught by the worker's checksum check", injected.Corrupted)
			}
			t.Logf("%s: %d bytes moved, 0 lost; injected %+v; worker checksum drops %d, netstack malformed %d; retransmits %d+%d",
				tc.name, moved, injected, badSum, malformed, sa.TCP.Retransmits, sb.TCP.Retransmits)
			checkFrames(t, mp)
		})
	}
}

// TestFaultsValidate checks that bad fault configurations are refused
// with a clear error.
func TestFaultsValidate(t *testing.T) {
	for _, f := range []Faults{
		{RX: FaultRates{Drop: -0.1}},
		{TX: FaultRates{Corrupt: 1.5}},
		{RX: FaultRates{Drop: 0.6, Duplicate: 0.6}},
		{TX: FaultRates{Delay: 0.1, DelayTime: -time.Second}},
	} {
		cfg := Config{Addrs: []netip.Prefix{memA4}, Faults: &f}
		cfg.setDefaults()
		if err := cfg.validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: validate = %v, want ErrConfig", f, err)
		}
	}
}

// TestMemFaultsOutage cuts the wire (every frame dropped both ways at one
// end) for 3 seconds in the middle of an echo transfer, then restores it:
// the connection must recover and the data arrive intact.
func TestMemFaultsOutage(t *testing.T) {
	mp := newFaultPair(t, &Faults{Seed: 5}, nil)
	if err := mp.b.SetFaults(FaultRates{Drop: 1}, FaultRates{}); !errors.Is(err, ErrNoFaults) {
		t.Errorf("SetFaults on a stack without Config.Faults: %v, want ErrNoFaults", err)
	}
	if err := mp.a.SetFaults(FaultRates{Drop: 2}, FaultRates{}); !errors.Is(err, ErrConfig) {
		t.Errorf("SetFaults with a rate of 2: %v, want ErrConfig", err)
	}
	done := make(chan int, 1)
	go func() {
		time.Sleep(20 * time.Millisecond) // mid-transfer
		if err := mp.a.SetFaults(FaultRates{Drop: 1}, FaultRates{Drop: 1}); err != nil {
			t.Error(err)
		}
		time.Sleep(3 * time.Second)
		before := mp.a.Stats().Queues[0]
		if err := mp.a.SetFaults(FaultRates{}, FaultRates{}); err != nil {
			t.Error(err)
		}
		done <- int(before.FaultsRX.Dropped + before.FaultsTX.Dropped)
	}()
	start := time.Now()
	moved := echoTransfer(t, mp, 8<<20, 60*time.Second)
	took := time.Since(start)
	dropped := <-done
	if dropped == 0 || took < 3*time.Second {
		t.Errorf("%d frames dropped; transfer took %v: the outage did not cut it", dropped, took)
	}
	t.Logf("%d bytes moved in %v through a 3 s outage (%d frames dropped in it)", moved, took.Round(time.Millisecond), dropped)
	checkFrames(t, mp)
}
