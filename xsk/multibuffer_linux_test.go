package xsk_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/ustack-dev/ustack/xsk"
	"github.com/vishvananda/netlink"
)

// TestPrivilegedMultiBuffer: on a veth pair with MTU 9000, a socket bound
// with MultiBuffer receives a 8,000-byte datagram from the kernel as a
// chain of frames (OptContd on all but the last) whose bytes, joined, are
// the datagram's frame; and a chain it sends reaches the kernel's socket
// as one datagram.
func TestPrivilegedMultiBuffer(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{MTU: 9000})
	u := p.Ustack
	var umem *xsk.UMEM
	var sock *xsk.Socket
	var prog *bpf.Program
	t.Cleanup(func() {
		if sock != nil {
			sock.Close()
		}
		if prog != nil {
			prog.Close()
		}
		if umem != nil {
			umem.Close()
		}
	})
	err := u.Do(func() error {
		var err error
		if umem, err = xsk.NewUMEM(xsk.UMEMConfig{FrameCount: 2048}); err != nil {
			return err
		}
		if sock, err = xsk.Open(umem, xsk.Config{Interface: u.Link, MultiBuffer: true}); err != nil {
			return err
		}
		prog, _, err = bpf.Setup(bpf.Steering{Ifindex: u.Ifindex, Mode: bpf.AttachNative, Sockets: []int{sock.FD()},
			Ports: []bpf.OwnedPort{{Addr: vethtest.UstackIPv4, Proto: bpf.UDP, Port: udpPort}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The kernel end knows ustack's MAC without asking.
	if err := p.Kernel.Netlink().NeighAdd(&netlink.Neigh{LinkIndex: p.Kernel.Ifindex, State: netlink.NUD_PERMANENT,
		IP: net.IP(vethtest.UstackIPv4.AsSlice()), HardwareAddr: u.MAC}); err != nil {
		t.Fatal(err)
	}
	c := kernelUDP(t, p, netip.AddrPortFrom(vethtest.UstackIPv4, udpPort))
	msg := make([]byte, 8000)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	var frame []byte
	var chain int
	descs := make([]xsk.Desc, 64)
	deadline := time.Now().Add(5 * time.Second)
	for done := false; !done; {
		if time.Now().After(deadline) {
			t.Fatalf("no whole datagram within 5 s (%d frames of a chain so far)", chain)
		}
		n := sock.Receive(descs)
		for _, d := range descs[:n] {
			frame = append(frame, umem.Data(d)...)
			chain++
			if d.Options&xsk.OptContd == 0 {
				done = true
				break
			}
		}
		sock.Recycle(descs[:n])
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if chain < 2 {
		t.Fatalf("the 8,000-byte datagram came in %d frame(s), want a chain", chain)
	}
	if len(frame) != 14+20+8+len(msg) || !bytes.Equal(frame[14+20+8:], msg) {
		t.Fatalf("chain of %d frames joins to %d bytes; want %d with the datagram at its end", chain, len(frame), 14+20+8+len(msg))
	}
	t.Logf("8,000-byte datagram: a chain of %d frames", chain)

	// Send it back as a chain: swap the addresses and ports.
	eth, ip, udp := frame[:14], frame[14:34], frame[34:42]
	var mac [6]byte
	copy(mac[:], eth[0:6])
	copy(eth[0:6], eth[6:12])
	copy(eth[6:12], mac[:])
	var a [4]byte
	copy(a[:], ip[12:16])
	copy(ip[12:16], ip[16:20])
	copy(ip[16:20], a[:])
	sp := binary.BigEndian.Uint16(udp[0:2])
	binary.BigEndian.PutUint16(udp[0:2], binary.BigEndian.Uint16(udp[2:4]))
	binary.BigEndian.PutUint16(udp[2:4], sp)
	binary.BigEndian.PutUint16(udp[6:8], 0) // no UDP checksum
	fs := int(umem.Config().FrameSize)
	var out []xsk.Desc
	for off := 0; off < len(frame); off += fs {
		addr, ok := sock.Alloc()
		if !ok {
			t.Fatal("no free TX frame")
		}
		n := copy(umem.Frame(addr), frame[off:])
		d := xsk.Desc{Addr: addr, Len: uint32(n)}
		if off+n < len(frame) {
			d.Options = xsk.OptContd
		}
		out = append(out, d)
	}
	if sock.Enqueue(out) != len(out) {
		t.Fatal("TX ring full")
	}
	if err := sock.Kick(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 9000)
	n, err := c.Read(got)
	if err != nil {
		t.Fatalf("the chain of %d frames sent back: %v", len(out), err)
	}
	if !bytes.Equal(got[:n], msg) {
		t.Fatalf("read %d bytes back, want the 8,000 sent", n)
	}
}
