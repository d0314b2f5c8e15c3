package asavie

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/vethtest"
)

func TestMain(m *testing.M) { os.Exit(vethtest.Main(m)) }

// TestPrivilegedFloorReflects: steered by ustack's program, the asavie/xdp
// floor answers the kernel's ARP and echoes its datagrams byte for byte.
func TestPrivilegedFloorReflects(t *testing.T) {
	pair := vethtest.NewT(t, vethtest.Options{})
	const port = 9000
	var prog *bpf.Program
	var f *Floor
	err := pair.Ustack.Do(func() (err error) {
		if f, err = Open(pair.Ustack.Ifindex, 0); err != nil {
			return err
		}
		prog, _, err = bpf.Setup(bpf.Steering{Ifindex: pair.Ustack.Ifindex, Mode: bpf.AttachNative, Sockets: []int{f.FD()},
			Owned: []bpf.Owned{{Addr: vethtest.UstackIPv4, Flags: bpf.OwnNeigh}},
			Ports: []bpf.OwnedPort{{Addr: vethtest.UstackIPv4, Proto: bpf.UDP, Port: port}}})
		return err
	})
	if prog != nil {
		defer prog.Close()
	}
	if f != nil {
		defer f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	f.MAC, f.IP = pair.Ustack.MAC, vethtest.UstackIPv4.As4()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); f.Run(stop, time.Minute) }()
	defer func() { close(stop); <-done }()

	var c net.Conn
	if err := pair.Kernel.Do(func() (err error) {
		c, err = net.Dial("udp4", netip.AddrPortFrom(vethtest.UstackIPv4, port).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 2048)
	for i := 0; i < 100; i++ {
		msg := []byte(fmt.Sprintf("datagram %d %s", i, bytes.Repeat([]byte{byte(i)}, i*7)))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, err := c.Read(buf)
		if err != nil || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("datagram %d: echo %q, %v", i, buf[:n], err)
		}
	}
	if f.ARPs.Load() == 0 || f.UDP.Load() < 100 || f.BadChecksums.Load() != 0 {
		t.Errorf("counters: %d ARP, %d UDP, %d bad checksums", f.ARPs.Load(), f.UDP.Load(), f.BadChecksums.Load())
	}
}
