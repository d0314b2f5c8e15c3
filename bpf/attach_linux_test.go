package bpf

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// attached returns the id of the XDP program on the link (0 for none) and
// the kernel's enum xdp_attached for it (1 driver, 2 generic).
func attached(ifindex int) (id, mode uint32, err error) {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return 0, 0, err
	}
	if x := l.Attrs().Xdp; x != nil && x.Attached {
		return x.ProgId, x.AttachMode, nil
	}
	return 0, 0, nil
}

// legacyAttach attaches fd through netlink, without a bpf_link, as a killed
// process of an older ustack (or another tool) leaves it.
func legacyAttach(ifindex, fd int) error {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return err
	}
	return netlink.LinkSetXdpFdWithFlags(l, fd, unix.XDP_FLAGS_DRV_MODE)
}

// The tests below run their bodies in the Ustack namespace through
// Host.Do, on a goroutine of its own: they report failures by returning
// errors, never by t.Fatal there.

func TestPrivilegedAttachReplacesStale(t *testing.T) {
	pair := vethtest.NewT(t, vethtest.Options{})
	ifindex := pair.Ustack.Ifindex
	err := pair.Ustack.Do(func() error {
		old, err := Load()
		if err != nil {
			return err
		}
		err = legacyAttach(ifindex, old.objs.UstackXdp.FD())
		old.Close() // the process dies; the program stays on the interface
		if err != nil {
			return err
		}
		if id, _, err := attached(ifindex); err != nil || id == 0 {
			return fmt.Errorf("stale program not attached (%v)", err)
		}

		p, err := Load()
		if err != nil {
			return err
		}
		defer p.Close()
		mode, err := p.Attach(ifindex, AttachAuto)
		if err != nil {
			return fmt.Errorf("attach over a stale ustack program: %w", err)
		}
		if mode != AttachNative {
			return fmt.Errorf("mode %v, want native on veth", mode)
		}
		id, _ := p.ID()
		if got, _, err := attached(ifindex); err != nil || got != uint32(id) {
			return fmt.Errorf("attached program %d (%v), want ours %d", got, err, id)
		}
		// A second Attach on the same Program is refused, not stacked.
		if _, err := p.Attach(ifindex, AttachAuto); err == nil {
			return errors.New("second Attach succeeded")
		}
		if err := p.Detach(); err != nil {
			return err
		}
		if got, _, err := attached(ifindex); err != nil || got != 0 {
			return fmt.Errorf("program %d still attached after Detach (%v)", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPrivilegedAttachRefusesForeign(t *testing.T) {
	pair := vethtest.NewT(t, vethtest.Options{})
	ifindex := pair.Ustack.Ifindex
	err := pair.Ustack.Do(func() error {
		foreign, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:    "someone_else",
			Type:    ebpf.XDP,
			License: "MIT",
			Instructions: asm.Instructions{
				asm.Mov.Imm(asm.R0, 2), // XDP_PASS
				asm.Return(),
			},
		})
		if err != nil {
			return err
		}
		defer foreign.Close()
		if err := legacyAttach(ifindex, foreign.FD()); err != nil {
			return err
		}
		defer func() {
			l, _ := netlink.LinkByIndex(ifindex)
			netlink.LinkSetXdpFdWithFlags(l, -1, unix.XDP_FLAGS_DRV_MODE)
		}()
		p, err := Load()
		if err != nil {
			return err
		}
		defer p.Close()
		if _, err := p.Attach(ifindex, AttachAuto); !errors.Is(err, ErrForeignProgram) {
			return fmt.Errorf("attach over a foreign program: %v, want ErrForeignProgram", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPrivilegedAttachGeneric: a generic attach is what the kernel reports
// (XDP_ATTACHED_SKB), and the program then sees the link's traffic: a
// datagram to the Ustack host's own address passes to the kernel and is
// counted pass_not_owned.
func TestPrivilegedAttachGeneric(t *testing.T) {
	pair := vethtest.NewT(t, vethtest.Options{})
	var p *Program
	var pc net.PacketConn
	err := pair.Ustack.Do(func() (err error) {
		if p, err = Load(); err != nil {
			return err
		}
		mode, err := p.Attach(pair.Ustack.Ifindex, AttachGeneric)
		if err != nil || mode != AttachGeneric || p.Mode() != AttachGeneric {
			return fmt.Errorf("generic attach: %v (Mode %v), %v", mode, p.Mode(), err)
		}
		id, _ := p.ID()
		if got, kmode, err := attached(pair.Ustack.Ifindex); err != nil || got != uint32(id) || kmode != 2 {
			return fmt.Errorf("kernel reports program %d in xdp_attached mode %d (%v), want ours %d in mode 2 (skb)", got, kmode, err, id)
		}
		pc, err = net.ListenPacket("udp4", netip.AddrPortFrom(pair.Ustack.IPv4, 0).String())
		return err
	})
	if p != nil {
		defer p.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	before, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	err = pair.Kernel.Do(func() error {
		c, err := net.Dial("udp4", pc.LocalAddr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("through generic xdp"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "through generic xdp" {
		t.Fatalf("datagram through the generic-mode program: %q, %v", buf[:n], err)
	}
	after, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if after[PassNotOwned] <= before[PassNotOwned] {
		t.Errorf("pass_not_owned did not grow: before %v, after %v", before, after)
	}
}

// TestPrivilegedAttachConcurrent: Attach, Detach and Mode from several
// goroutines at once (run with -race to see the lock matter); exactly one
// of the racing Attach calls wins.
func TestPrivilegedAttachConcurrent(t *testing.T) {
	pair := vethtest.NewT(t, vethtest.Options{})
	var p *Program
	if err := pair.Ustack.Do(func() (err error) { p, err = Load(); return err }); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for round := 0; round < 3; round++ {
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Attach resolves the ifindex in the calling thread's
				// namespace.
				pair.Ustack.Do(func() error {
					if _, err := p.Attach(pair.Ustack.Ifindex, AttachNative); err == nil {
						wins.Add(1)
					}
					_ = p.Mode()
					return nil
				})
			}()
		}
		wg.Wait()
		if w := wins.Load(); w != 1 {
			t.Fatalf("round %d: %d concurrent Attach calls succeeded, want 1", round, w)
		}
		if err := p.Detach(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVethQueuesMatch: vethtest, which cannot import this package (these
// tests import it), bounds a veth pair's queues by the number of queues
// the program serves.
func TestVethQueuesMatch(t *testing.T) {
	if vethtest.MaxQueues != MaxQueues {
		t.Errorf("vethtest.MaxQueues %d, bpf.MaxQueues %d", vethtest.MaxQueues, MaxQueues)
	}
}
