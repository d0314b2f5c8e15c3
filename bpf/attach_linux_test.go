package bpf

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// attachedID returns the id of the XDP program on the link, 0 for none.
func attachedID(t *testing.T, ifindex int) uint32 {
	t.Helper()
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		t.Fatal(err)
	}
	if x := l.Attrs().Xdp; x != nil && x.Attached {
		return x.ProgId
	}
	return 0
}

// legacyAttach attaches fd through netlink, without a bpf_link, as a killed
// process of an older ustack (or another tool) leaves it.
func legacyAttach(t *testing.T, ifindex, fd int) {
	t.Helper()
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetXdpFdWithFlags(l, fd, unix.XDP_FLAGS_DRV_MODE); err != nil {
		t.Fatal(err)
	}
}

func TestPrivilegedAttachReplacesStale(t *testing.T) {
	pair := vethtest.NewT(t, vethtest.Options{})
	ifindex := pair.Ustack.Ifindex
	err := pair.Ustack.Do(func() error {
		old, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		legacyAttach(t, ifindex, old.objs.UstackXdp.FD())
		old.Close() // the process dies; the program stays on the interface
		if attachedID(t, ifindex) == 0 {
			t.Fatal("stale program not attached")
		}

		p, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		mode, err := p.Attach(ifindex, AttachAuto)
		if err != nil {
			t.Fatalf("attach over a stale ustack program: %v", err)
		}
		if mode != AttachNative {
			t.Errorf("mode %v, want native on veth", mode)
		}
		id, _ := p.ID()
		if got := attachedID(t, ifindex); got != uint32(id) {
			t.Errorf("attached program %d, want ours %d", got, id)
		}
		// A second Attach on the same Program is refused, not stacked.
		if _, err := p.Attach(ifindex, AttachAuto); err == nil {
			t.Error("second Attach succeeded")
		}
		if err := p.Detach(); err != nil {
			t.Fatal(err)
		}
		if got := attachedID(t, ifindex); got != 0 {
			t.Errorf("program %d still attached after Detach", got)
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
			t.Fatal(err)
		}
		defer foreign.Close()
		legacyAttach(t, ifindex, foreign.FD())
		defer func() {
			l, _ := netlink.LinkByIndex(ifindex)
			netlink.LinkSetXdpFdWithFlags(l, -1, unix.XDP_FLAGS_DRV_MODE)
		}()
		p, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if _, err := p.Attach(ifindex, AttachAuto); !errors.Is(err, ErrForeignProgram) {
			t.Fatalf("attach over a foreign program: %v, want ErrForeignProgram", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPrivilegedAttachGeneric(t *testing.T) {
	pair := vethtest.NewT(t, vethtest.Options{})
	err := pair.Ustack.Do(func() error {
		p, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		mode, err := p.Attach(pair.Ustack.Ifindex, AttachGeneric)
		if err != nil || mode != AttachGeneric {
			t.Fatalf("generic attach: %v, %v", mode, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
