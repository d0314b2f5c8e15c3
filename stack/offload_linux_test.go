package stack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"testing"

	"github.com/ustack-dev/ustack/vethtest"
	"golang.org/x/sys/unix"
)

// TestPrivilegedOffloadBulk moves 16 MiB each way at once between the
// kernel and ustack, over IPv4 and IPv6, with every TX offload on and with
// each off, on a default veth pair (the kernel end's TX checksum offload
// on, so it sends partial checksums) and with the kernel end sending full
// checksums; SHA-256 at both ends. GRO on and off as well.
func TestPrivilegedOffloadBulk(t *testing.T) {
	for _, oc := range offloadConfigs {
		for _, network := range []string{"tcp4", "tcp6"} {
			for _, kernelFull := range []bool{false, true} {
				name := oc.name + "/" + network + "/kernel-partial-checksums"
				if kernelFull {
					name = oc.name + "/" + network + "/kernel-full-checksums"
				}
				t.Run(name, func(t *testing.T) {
					cfg := Config{Poll: Spin}
					oc.set(&cfg)
					_, s := testBulk(t, vethtest.Options{KernelTxChecksumOff: kernelFull}, cfg, 16<<20, network)
					q := s.Stats().Queues[0]
					// A write counts its frames before its packet, and
					// the worker may still be sending the connection's
					// last ACKs: a write or two under way. With GSO,
					// frames outnumber packets by thousands here.
					if gso := q.TxFrames > q.TxPackets+2; gso != oc.gso {
						t.Errorf("%d packets in %d frames: GSO in use %v", q.TxPackets, q.TxFrames, gso)
					}
					if gro := q.RxCoalesced > 0; gro != oc.gro {
						t.Errorf("%d segments coalesced: GRO in use %v", q.RxCoalesced, gro)
					}
					if partial := q.RxPartialChecksum > 0; partial == kernelFull {
						t.Errorf("%d partial checksums received, kernel end's TX checksum offload on: %v", q.RxPartialChecksum, !kernelFull)
					}
					if q.RxBadChecksum > 0 || q.TxOversize > 0 {
						t.Errorf("%d bad checksums received, %d oversize packets", q.RxBadChecksum, q.TxOversize)
					}
				})
			}
		}
	}
}

// TestPrivilegedMTU3000Bulk runs the bulk test on a veth pair with MTU
// 3000 (4096-byte frames): both ends segment to the larger MTU, which the
// kernel's MSS for the connection shows.
func TestPrivilegedMTU3000Bulk(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			p, s := testBulk(t, vethtest.Options{MTU: 3000}, Config{Poll: Spin}, 16<<20, network)
			ln, err := s.Listen(network, ":9002")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			addr := netip.AddrPortFrom(vethtest.UstackIPv4, 9002)
			if network == "tcp6" {
				addr = netip.AddrPortFrom(vethtest.UstackIPv6, 9002)
			}
			c, err := kernelDial(context.Background(), p, network, addr.String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rc, err := c.(syscall.Conn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var mss int
			var serr error
			rc.Control(func(fd uintptr) { mss, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG) })
			if serr != nil {
				t.Fatal(serr)
			}
			// 3000 less the IP and TCP headers (with timestamps).
			if mss < 2900 || mss > 2960 {
				t.Errorf("kernel's MSS to ustack %d, want about 2948 for MTU 3000", mss)
			}
		})
	}
}

// TestPrivilegedMTULimits: native XDP on veth carries MTUs that fit a
// UMEM frame and, as multi-buffer chains, those that do not (3507 and
// 9000 with 4096-byte frames, 1779 with 2048); past ustack's largest
// frame New says so instead of falling back or truncating.
func TestPrivilegedMTULimits(t *testing.T) {
	for _, c := range []struct {
		mtu, frame int
		ok         bool
	}{{3506, 4096, true}, {3507, 4096, true}, {9000, 4096, true}, {1778, 2048, true}, {1779, 2048, true}, {maxMultiBufferMTU + 1, 4096, false}} {
		p := vethtest.NewT(t, vethtest.Options{MTU: c.mtu})
		var s *Stack
		err := p.Ustack.Do(func() (err error) {
			s, err = New(Config{Interface: p.Ustack.Link, Addrs: []netip.Prefix{ustack4}, FrameSize: uint32(c.frame), Logf: t.Logf})
			return err
		})
		if c.ok {
			if err != nil {
				t.Errorf("MTU %d, frames of %d: %v", c.mtu, c.frame, err)
				continue
			}
			if m := s.Stats().AttachMode; m.String() != "native" {
				t.Errorf("MTU %d: attached %v", c.mtu, m)
			}
			s.Close()
			continue
		}
		if !errors.Is(err, ErrConfig) {
			if s != nil {
				s.Close()
			}
			t.Errorf("MTU %d, frames of %d: %v, want ErrConfig", c.mtu, c.frame, err)
		} else {
			t.Logf("MTU %d, frames of %d: %v", c.mtu, c.frame, err)
		}
	}
}

// TestPrivilegedJumboBulk: on a veth pair with MTU 9000, 64 MiB each way
// at once over IPv4 and 16 MiB over IPv6 between the kernel and ustack
// (and 16 MiB at MTU 3600, past what a page holds beside the kernel's
// headroom, where the socket is bound for chains but frames fit one UMEM
// frame),
// checked by SHA-256, in frames that span UMEM frames both ways: the
// kernel's arrive as chains the sgio layer joins, ustack's GSO output
// leaves as chains.
func TestPrivilegedJumboBulk(t *testing.T) {
	for _, c := range []struct {
		network string
		mtu     int
		size    int
	}{{"tcp4", 9000, 64 << 20}, {"tcp6", 9000, 16 << 20}, {"tcp4", 3600, 16 << 20}} {
		t.Run(fmt.Sprintf("%s/%d", c.network, c.mtu), func(t *testing.T) {
			_, s := testBulk(t, vethtest.Options{MTU: c.mtu}, Config{Poll: Spin}, c.size, c.network)
			m := s.Stats().Queues[0].MultiBuffer
			t.Logf("multi-buffer: %+v", m)
			if c.mtu > 4096-ethHeaderLen && (m.RxChains == 0 || m.TxChains == 0) || m.RxChainsDropped != 0 {
				t.Errorf("multi-buffer counters %+v: want chains both ways where a frame passes a UMEM frame, none dropped", m)
			}
		})
	}
}
