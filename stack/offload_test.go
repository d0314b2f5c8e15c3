package stack

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/testpkt"
)

// offloadConfigs are the TX offload settings the tests run with.
var offloadConfigs = []struct {
	name     string
	set      func(*Config)
	gso, gro bool // in use
}{
	{"default", func(*Config) {}, true, true},
	{"no-gso", func(c *Config) { c.Debug.NoGSO = true }, false, true},
	{"no-gro", func(c *Config) { c.Debug.NoGRO = true }, true, false},
	{"no-tx-checksum", func(c *Config) { c.Debug.NoTxChecksum = true }, false, true},
}

// frameChecker checks every frame a stack transmits, as a tap on the
// wire: no larger than the MTU, and every IPv4/IPv6 TCP or UDP checksum
// valid by testpkt's RFC 1071 reference (no code shared with package
// offload).
type frameChecker struct {
	mu     sync.Mutex
	frames atomic.Uint64
	err    error
}

func (c *frameChecker) check(f []byte) {
	c.frames.Add(1)
	if err := referenceFrameCheck(f); err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = fmt.Errorf("frame %d (%d bytes): %w", c.frames.Load(), len(f), err)
		}
		c.mu.Unlock()
	}
}

func (c *frameChecker) result() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func referenceFrameCheck(f []byte) error {
	if len(f) > ethHeaderLen+1500 {
		return fmt.Errorf("larger than the MTU")
	}
	if len(f) < ethHeaderLen {
		return fmt.Errorf("runt")
	}
	ip := f[ethHeaderLen:]
	var src, dst netip.Addr
	var proto uint8
	var seg []byte
	switch binary.BigEndian.Uint16(f[12:]) {
	case testpkt.EtherTypeIPv4:
		ihl := int(ip[0]&0xf) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if total != len(ip) {
			return fmt.Errorf("IPv4 total length %d, %d bytes", total, len(ip))
		}
		if testpkt.Checksum(ip[:ihl]) != 0 {
			return fmt.Errorf("bad IPv4 header checksum")
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return nil // a fragment
		}
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		proto, seg = ip[9], ip[ihl:]
	case testpkt.EtherTypeIPv6:
		if int(binary.BigEndian.Uint16(ip[4:]))+40 != len(ip) {
			return fmt.Errorf("IPv6 payload length %d, %d bytes", binary.BigEndian.Uint16(ip[4:]), len(ip))
		}
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		proto, seg = ip[6], ip[40:]
	default:
		return nil
	}
	if proto != testpkt.ProtoTCP && proto != testpkt.ProtoUDP {
		return nil
	}
	if testpkt.Checksum(append(testpkt.PseudoHeader(src, dst, proto, len(seg)), seg...)) != 0 {
		return fmt.Errorf("bad %d checksum", proto)
	}
	return nil
}

// TestMemOffloadBulk moves 4 MiB each way (echoed) between two stacks with
// each TX offload setting, over IPv4 and IPv6, checking SHA-256 and every
// frame on the wire: its size, its checksums (by the reference), and that
// GSO sends fewer packets down than frames when on, as many when off.
func TestMemOffloadBulk(t *testing.T) {
	for _, oc := range offloadConfigs {
		for _, network := range []string{"tcp4", "tcp6"} {
			t.Run(oc.name+"/"+network, func(t *testing.T) {
				mp := newMemPairCfg(t, Adaptive, oc.set, oc.set)
				var ca, cb frameChecker
				mp.pa.setMangle(ca.check)
				mp.pb.setMangle(cb.check)
				addr := memB4
				if network == "tcp6" {
					addr = memB6
				}
				ln, err := mp.b.Listen(network, netip.AddrPortFrom(addr.Addr(), 9).String())
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				echo(t, ln)
				c, err := mp.a.Dial(network, ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				const size = 4 << 20
				data := make([]byte, size)
				rng := rand.New(rand.NewPCG(1, 2))
				for i := range data {
					data[i] = byte(rng.Uint32())
				}
				want := sha256.Sum256(data)
				errc := make(chan error, 1)
				go func() {
					_, err := c.Write(data)
					errc <- err
				}()
				h := sha256.New()
				if _, err := io.CopyN(h, c, size); err != nil {
					t.Fatal(err)
				}
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(h.Sum(nil), want[:]) {
					t.Fatal("sha256 mismatch")
				}
				for _, c := range []*frameChecker{&ca, &cb} {
					if err := c.result(); err != nil {
						t.Fatal(err)
					}
				}
				sa, sb := mp.a.Stats().Queues[0], mp.b.Stats().Queues[0]
				gso := sa.TxFrames > sa.TxPackets && sb.TxFrames > sb.TxPackets
				t.Logf("A: %d packets in %d frames; B: %d in %d", sa.TxPackets, sa.TxFrames, sb.TxPackets, sb.TxFrames)
				if gso != oc.gso {
					t.Errorf("GSO in use %v, want %v", gso, oc.gso)
				}
				if gro := sa.RxCoalesced > 0 && sb.RxCoalesced > 0; gro != oc.gro {
					t.Errorf("GRO in use %v (%d, %d segments coalesced), want %v", gro, sa.RxCoalesced, sb.RxCoalesced, oc.gro)
				}
				// A last ACK may be between the wire and the counter when
				// the stats are read: wait for the two to settle.
				for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if ca.frames.Load() == sa.TxFrames && cb.frames.Load() == sb.TxFrames {
						break
					}
					sa, sb = mp.a.Stats().Queues[0], mp.b.Stats().Queues[0]
				}
				if ca.frames.Load() != sa.TxFrames || cb.frames.Load() != sb.TxFrames {
					t.Errorf("TxFrames %d, %d; frames on the wire %d, %d", sa.TxFrames, sb.TxFrames, ca.frames.Load(), cb.frames.Load())
				}
			})
		}
	}
}

// TestMemOffloadUDP sends UDP datagrams from empty to beyond the MTU
// (fragmented) over IPv4 and IPv6 with each TX offload setting: each
// arrives intact, every frame on the wire valid by the reference.
func TestMemOffloadUDP(t *testing.T) {
	for _, oc := range offloadConfigs {
		for _, fam := range []struct {
			network string
			a, b    netip.Prefix
			max     int
		}{{"udp4", memA4, memB4, 1500 - 28}, {"udp6", memA6, memB6, 1500 - 48}} {
			t.Run(oc.name+"/"+fam.network, func(t *testing.T) {
				mp := newMemPairCfg(t, Adaptive, oc.set, oc.set)
				var ca frameChecker
				mp.pa.setMangle(ca.check)
				pb, err := mp.b.ListenPacket(fam.network, netip.AddrPortFrom(fam.b.Addr(), 53).String())
				if err != nil {
					t.Fatal(err)
				}
				defer pb.Close()
				pa, err := mp.a.ListenPacket(fam.network, netip.AddrPortFrom(fam.a.Addr(), 5353).String())
				if err != nil {
					t.Fatal(err)
				}
				defer pa.Close()
				pb.SetDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 5000)
				// Beyond the MTU netstack fragments the datagram; its
				// checksum must still cover the whole of it.
				for _, n := range []int{0, 1, 2, 3, 63, 64, 127, 128, 129, 1000, fam.max - 1, fam.max, fam.max + 1, 1800, 4000} {
					msg := bytes.Repeat([]byte{byte(n)}, n)
					if _, err := pa.WriteTo(msg, pb.LocalAddr()); err != nil {
						t.Fatal(err)
					}
					got, _, err := pb.ReadFrom(buf)
					if err != nil {
						t.Fatalf("size %d: %v", n, err)
					}
					if !bytes.Equal(buf[:got], msg) {
						t.Fatalf("size %d: got %d bytes", n, got)
					}
				}
				if err := ca.result(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkMemBulk moves data one way between two stacks over the
// in-memory wire with each TX offload setting: what netstack and ustack's
// TX path cost per byte with no kernel involved (both stacks share this
// process's CPUs, so ns/op is their combined CPU per 64 KiB written).
func BenchmarkMemBulk(b *testing.B) {
	for _, oc := range offloadConfigs {
		b.Run(oc.name, func(b *testing.B) {
			mp := newMemPairCfg(b, Spin, oc.set, oc.set)
			c, srv := dialPair(b, mp, 9)
			done := make(chan int64, 1)
			go func() {
				n, _ := io.Copy(io.Discard, srv)
				done <- n
			}()
			buf := make([]byte, 64<<10)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			c.Close()
			if n := <-done; n != int64(b.N*len(buf)) {
				b.Fatalf("received %d of %d bytes", n, b.N*len(buf))
			}
			b.StopTimer()
			st := mp.a.Stats().Queues[0]
			b.ReportMetric(float64(st.TxFrames)/float64(max(1, st.TxPackets)), "frames/packet")
		})
	}
}
