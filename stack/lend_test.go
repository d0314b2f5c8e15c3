package stack

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// lentBuf is a Lender: a buffer lent to the send queue, scribbled over
// once released, so that any read of it by netstack after Release (a
// retransmission) would corrupt the stream.
type lentBuf struct {
	b        []byte
	released atomic.Int32
}

func (l *lentBuf) Release() {
	l.released.Add(1)
	for i := range l.b {
		l.b[i] = 0xee
	}
}

// TestMemLentWrites: WriteLent and TryWriteLent queue lent bytes that
// arrive intact through loss, reordering, duplication and corruption
// (retransmissions read them in place), and each lending call's Release
// comes once, after which netstack never reads the memory again.
func TestMemLentWrites(t *testing.T) {
	faults := func(c *Config) {
		r := FaultRates{Drop: 0.01, Reorder: 0.01, Duplicate: 0.01, Corrupt: 0.01}
		c.Faults = &Faults{Seed: 5, RX: r, TX: r}
	}
	mp := newMemPairCfg(t, Adaptive, faults, faults)
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 9).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		s, _, _ := sink(c)
		c.Close()
		got <- s[:]
	}()
	c, err := mp.a.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	lw := c.(LendWriter)
	want := sha256.New()
	var lent []*lentBuf
	calls := 0
	for i := 0; i < 48; i++ {
		b := make([]byte, 64<<10+i*331) // not a multiple of the MSS
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		want.Write(b)
		if i%2 == 0 {
			l := &lentBuf{b: b}
			lent = append(lent, l)
			calls++
			if n, err := lw.WriteLent(b, l); n != len(b) || err != nil {
				t.Fatalf("WriteLent: %d of %d, %v", n, len(b), err)
			}
			continue
		}
		// TryWriteLent takes what there is room for; the rest is lent
		// again, from a buffer of its own (the last one's is
		// scribbled over when it is released), a Release each time.
		for off := 0; off < len(b); {
			l := &lentBuf{b: append([]byte(nil), b[off:]...)}
			lent = append(lent, l)
			calls++
			n, err := lw.TryWriteLent(l.b, l)
			if err != nil {
				t.Fatal(err)
			}
			off += n
			if n == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	c.Close()
	if sum := <-got; !bytes.Equal(sum, want.Sum(nil)) {
		t.Fatal("the bytes received differ from the bytes lent")
	}
	// Releases come as the last ACKs do.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		all := true
		for _, l := range lent {
			all = all && l.released.Load() > 0
		}
		if all {
			break
		}
	}
	for i, l := range lent {
		if n := l.released.Load(); n != 1 {
			t.Errorf("lend %d of %d released %d times", i, calls, n)
		}
	}
}

// lentSlot is a buffer BenchmarkMemLentWrite lends, reused once every
// lend of it is released.
type lentSlot struct {
	b    []byte
	out  atomic.Int32
	wait chan struct{}
}

func (s *lentSlot) Release() {
	if s.out.Add(-1) == 0 {
		s.wait <- struct{}{}
	}
}

// BenchmarkMemLentWrite moves 64 KiB per op one way over the in-memory
// wire, written three ways: copied (Write), lent in one call (WriteLent,
// as a queue pair lends its transmit buffer), and lent one 1,448-byte
// segment at a time (a lower bound for lending a Write's FPDUs straight
// from registered memory: each would also need views of its header and
// CRC). ns/op is both stacks' time per 64 KiB.
func BenchmarkMemLentWrite(b *testing.B) {
	for _, mode := range []string{"copy", "lend", "lend-per-segment"} {
		b.Run(mode, func(b *testing.B) {
			mp := newMemPair(b, Spin)
			c, srv := dialPair(b, mp, 9)
			done := make(chan int64, 1)
			go func() {
				n, _ := io.Copy(io.Discard, srv)
				done <- n
			}()
			lw := c.(LendWriter)
			slots := make([]*lentSlot, 32)
			for i := range slots {
				slots[i] = &lentSlot{b: make([]byte, 64<<10), wait: make(chan struct{}, 1)}
				slots[i].wait <- struct{}{}
			}
			const seg = 1448
			var err error
			b.SetBytes(64 << 10)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := slots[i%len(slots)]
				<-s.wait // every lend of it released
				switch mode {
				case "copy":
					s.wait <- struct{}{}
					_, err = c.Write(s.b)
				case "lend":
					s.out.Store(1)
					_, err = lw.WriteLent(s.b, s)
				default:
					s.out.Store(int32((len(s.b) + seg - 1) / seg))
					for off := 0; off < len(s.b) && err == nil; off += seg {
						_, err = lw.WriteLent(s.b[off:min(off+seg, len(s.b))], s)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			c.Close()
			if n := <-done; n != int64(b.N)<<16 {
				b.Fatalf("received %d of %d bytes", n, int64(b.N)<<16)
			}
		})
	}
}
