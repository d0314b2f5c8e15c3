package vethtest

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestPrivilegedPairCarriesKernelTraffic(t *testing.T) {
	p := NewT(t, Options{Queues: 2})
	for _, dst := range []netip.Addr{p.Ustack.IPv4, p.Ustack.IPv6} {
		var srv net.PacketConn
		if err := p.Ustack.Do(func() (err error) {
			srv, err = net.ListenPacket("udp", netip.AddrPortFrom(dst, 0).String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		var cli net.Conn
		if err := p.Kernel.Do(func() (err error) {
			cli, err = net.Dial("udp", srv.LocalAddr().String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if _, err := cli.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		n, from, err := srv.ReadFrom(buf)
		if err != nil {
			t.Fatalf("to %v: %v", dst, err)
		}
		if string(buf[:n]) != "hello" {
			t.Fatalf("to %v: got %q", dst, buf[:n])
		}
		if got := from.(*net.UDPAddr).AddrPort().Addr().Unmap(); got != p.Kernel.IPv4 && got != p.Kernel.IPv6 {
			t.Fatalf("from %v, want a kernel-host address", got)
		}
	}
	var on bool
	if err := p.Kernel.Do(func() (err error) { on, err = txChecksum(p.Kernel.Link); return err }); err != nil {
		t.Fatal(err)
	}
	if !on {
		t.Error("tx checksum offload off at the kernel end of a default pair")
	}
	if p.Kernel.Ifindex == 0 || len(p.Ustack.MAC) != 6 {
		t.Fatalf("host fields not filled: %+v", p.Ustack)
	}
}

func TestPrivilegedKernelTxChecksumOff(t *testing.T) {
	p := NewT(t, Options{KernelTxChecksumOff: true})
	var on bool
	if err := p.Kernel.Do(func() (err error) { on, err = txChecksum(p.Kernel.Link); return err }); err != nil {
		t.Fatal(err)
	}
	if on {
		t.Error("tx checksum offload still on at the kernel end")
	}
}

func TestPrivilegedKernelGRO(t *testing.T) {
	for _, want := range []bool{false, true} {
		p := NewT(t, Options{KernelGRO: want})
		var on bool
		if err := p.Kernel.Do(func() (err error) { on, err = gro(p.Kernel.Link); return err }); err != nil {
			t.Fatal(err)
		}
		if on != want {
			t.Errorf("KernelGRO %v: gro on at the kernel end %v", want, on)
		}
	}
}

func TestPrivilegedCloseDeletesNamespaces(t *testing.T) {
	Privileged(t)
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{p.Kernel.Namespace, p.Ustack.Namespace}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, n := range names {
		if _, err := netns.GetFromName(n); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s still exists after Close (err %v)", n, err)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{Queues: -1}, {Queues: 65}, {MTU: 500}, {MTU: 70000}} {
		p, err := New(o)
		if err == nil {
			p.Close()
		}
		if !errors.Is(err, ErrOptions) {
			t.Errorf("New(%+v) = %v, want ErrOptions", o, err)
		}
	}
}

func TestToolsFindsWhatIsInstalled(t *testing.T) {
	Tools(t, "ip") // iproute2 is on every machine this runs on
	ok := t.Run("missing", func(t *testing.T) {
		t.Setenv("CI", "")
		Tools(t, "no-such-command-ustack")
		t.Error("Tools returned for a missing command")
	})
	if !ok {
		t.Error("a missing tool outside CI should skip, not fail")
	}
}
