package xsk_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/ustack-dev/ustack/xsk"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

const udpPort = 9000

// rig is a veth pair with ustack's program on the Ustack end and one
// socket per queue sharing one UMEM.
type rig struct {
	pair  *vethtest.Pair
	prog  *bpf.Program
	umem  *xsk.UMEM
	socks []*xsk.Socket
}

func newRig(t testing.TB, queues int) *rig {
	t.Helper()
	r := &rig{pair: vethtest.NewT(t, vethtest.Options{Queues: queues})}
	t.Cleanup(func() {
		for _, s := range r.socks {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
		if r.umem != nil {
			if err := r.umem.Close(); err != nil {
				t.Error(err)
			}
		}
		if r.prog != nil {
			if err := r.prog.Close(); err != nil {
				t.Error(err)
			}
		}
	})
	u := r.pair.Ustack
	err := u.Do(func() error {
		var err error
		if r.umem, err = xsk.NewUMEM(xsk.UMEMConfig{FrameCount: uint32(queues) * 2048}); err != nil {
			return err
		}
		steer := bpf.Steering{Ifindex: u.Ifindex, Mode: bpf.AttachAuto,
			Owned: []bpf.Owned{{Addr: vethtest.UstackIPv4, Flags: bpf.OwnNeigh | bpf.OwnICMP}},
			Ports: []bpf.OwnedPort{{Addr: vethtest.UstackIPv4, Proto: bpf.UDP, Port: udpPort}}}
		for q := 0; q < queues; q++ {
			s, err := xsk.Open(r.umem, xsk.Config{Interface: u.Link, Queue: q})
			if err != nil {
				return err
			}
			r.socks = append(r.socks, s)
			if s.ZeroCopy() {
				return errors.New("veth socket reports zero-copy")
			}
			steer.Sockets = append(steer.Sockets, s.FD())
		}
		var mode bpf.AttachMode
		if r.prog, mode, err = bpf.Setup(steer); err != nil {
			return err
		}
		if mode != bpf.AttachNative {
			return fmt.Errorf("attached in %v mode, want native on veth", mode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recorder records the UDP payloads a reflector.Reflector receives.
type recorder struct {
	*reflector.Reflector
	mu  sync.Mutex
	got [][]byte
}

func (r *rig) startReflectors(t *testing.T) []*recorder {
	var rfs []*recorder
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range r.socks {
		rf := &recorder{Reflector: &reflector.Reflector{Sock: s, Responder: reflector.Responder{MAC: r.pair.Ustack.MAC, IP: vethtest.UstackIPv4.As4()}}}
		rf.OnUDP = func(p []byte) {
			rf.mu.Lock()
			rf.got = append(rf.got, append([]byte(nil), p...))
			rf.mu.Unlock()
		}
		rfs = append(rfs, rf)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rf.Run(stop, time.Minute)
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
	return rfs
}

func kernelUDP(t *testing.T, p *vethtest.Pair, dst netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := p.Kernel.Do(func() error {
		conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
		c = conn
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPrivilegedReflectUDP: the kernel resolves the owned address through
// the XSK's ARP replies, its UDP datagrams arrive at the XSK byte for byte
// with valid checksums, and the XSK's transmitted replies reach it.
func TestPrivilegedReflectUDP(t *testing.T) {
	r := newRig(t, 1)
	rf := r.startReflectors(t)[0]
	c := kernelUDP(t, r.pair, netip.AddrPortFrom(vethtest.UstackIPv4, udpPort))
	const n = 200
	buf := make([]byte, 2048)
	for i := 0; i < n; i++ {
		msg := []byte(fmt.Sprintf("datagram %d %s", i, bytes.Repeat([]byte{byte(i)}, i*5)))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		m, err := c.Read(buf)
		if err != nil {
			t.Fatalf("datagram %d: no echo: %v", i, err)
		}
		if !bytes.Equal(buf[:m], msg) {
			t.Fatalf("datagram %d: echo %q, want %q", i, buf[:m], msg)
		}
		rf.mu.Lock()
		last := rf.got[len(rf.got)-1]
		rf.mu.Unlock()
		if !bytes.Equal(last, msg) {
			t.Fatalf("datagram %d: XSK received %q", i, last)
		}
	}
	if rf.ARPs.Load() == 0 {
		t.Error("no ARP request reached the XSK")
	}
	if b := rf.BadChecksums.Load(); b != 0 {
		t.Errorf("%d datagrams arrived with bad UDP checksums", b)
	}
	// The kernel accepted the XSK's ARP reply.
	neighs, err := r.pair.Kernel.Netlink().NeighList(r.pair.Kernel.Ifindex, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, nb := range neighs {
		if nb.IP.Equal(vethtest.UstackIPv4.AsSlice()) && bytes.Equal(nb.HardwareAddr, r.pair.Ustack.MAC) {
			found = true
		}
	}
	if !found {
		t.Errorf("kernel has no neighbour entry %v → %v: %+v", vethtest.UstackIPv4, r.pair.Ustack.MAC, neighs)
	}
	st, err := r.socks[0].Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.RxPackets < n || st.TxPackets < n || st.RxInvalid != 0 || st.TxInvalid != 0 {
		t.Errorf("stats: %+v", st)
	}
	cnt, err := r.prog.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if cnt[bpf.RedirectPort] < n || cnt[bpf.RedirectNeigh] == 0 {
		t.Errorf("program counters: %v", cnt)
	}
}

// TestPrivilegedHostTrafficPasses: while ustack owns 198.18.0.10 and a UDP
// port, the kernel on the same interface keeps its own address: UDP to it
// and TCP to it work, ARP for it is the kernel's.
func TestPrivilegedHostTrafficPasses(t *testing.T) {
	r := newRig(t, 1)
	r.startReflectors(t)
	var srv net.PacketConn
	var ln net.Listener
	if err := r.pair.Ustack.Do(func() (err error) {
		// The same port number ustack owns on its own address.
		if srv, err = net.ListenPacket("udp4", fmt.Sprintf("%v:%d", vethtest.UstackHostIPv4, udpPort)); err != nil {
			return err
		}
		ln, err = net.Listen("tcp4", fmt.Sprintf("%v:0", vethtest.UstackHostIPv4))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer ln.Close()
	c := kernelUDP(t, r.pair, netip.AddrPortFrom(vethtest.UstackHostIPv4, udpPort))
	if _, err := c.Write([]byte("to the kernel")); err != nil {
		t.Fatal(err)
	}
	srv.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 64)
	n, _, err := srv.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "to the kernel" {
		t.Fatalf("kernel socket on the XDP interface got %q, %v", buf[:n], err)
	}
	go func() {
		if a, err := ln.Accept(); err == nil {
			a.Write([]byte("tcp ok"))
			a.Close()
		}
	}()
	var tc net.Conn
	if err := r.pair.Kernel.Do(func() (err error) {
		tc, err = net.DialTimeout("tcp4", ln.Addr().String(), 3*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.SetReadDeadline(time.Now().Add(3 * time.Second))
	n, _ = tc.Read(buf)
	if string(buf[:n]) != "tcp ok" {
		t.Fatalf("tcp to the kernel: %q", buf[:n])
	}
	cnt, _ := r.prog.Counters()
	if cnt[bpf.PassNotOwned] == 0 {
		t.Errorf("no frame counted pass_not_owned: %v", cnt)
	}
	if cnt[bpf.RedirectPort] != 0 {
		t.Errorf("host traffic redirected: %v", cnt)
	}
}

// TestPrivilegedTwoQueues: on a two-queue veth, flows spread over both
// queues and each queue's socket (sharing one UMEM) receives its own.
func TestPrivilegedTwoQueues(t *testing.T) {
	r := newRig(t, 2)
	rfs := r.startReflectors(t)
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 64)
	for flow := 0; flow < 256 && time.Now().Before(deadline); flow++ {
		c := kernelUDP(t, r.pair, netip.AddrPortFrom(vethtest.UstackIPv4, udpPort))
		c.Write([]byte(fmt.Sprintf("flow %d", flow)))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("flow %d: no echo: %v", flow, err)
		}
		c.Close()
		if rfs[0].UDP.Load() > 0 && rfs[1].UDP.Load() > 0 {
			return
		}
	}
	t.Fatalf("queues did not both receive: queue 0 got %d, queue 1 got %d", rfs[0].UDP.Load(), rfs[1].UDP.Load())
}

func TestPrivilegedZeroCopyRequiredOnVeth(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{})
	err := p.Ustack.Do(func() error {
		u, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: 64})
		if err != nil {
			return err
		}
		defer u.Close()
		s, err := xsk.Open(u, xsk.Config{Interface: p.Ustack.Link, Mode: xsk.BindZeroCopy, FillSize: 32, TxSize: 32})
		if err == nil {
			s.Close()
		}
		return err
	})
	if !errors.Is(err, xsk.ErrZeroCopy) {
		t.Fatalf("zero-copy on veth: %v, want ErrZeroCopy", err)
	}
}

// TestPrivilegedWaitWakes: Wait returns when a frame arrives, when
// Interrupt is called during it, and at once after an earlier Interrupt.
func TestPrivilegedWaitWakes(t *testing.T) {
	r := newRig(t, 1)
	s := r.socks[0]
	within := func(what string, d time.Duration, f func()) {
		t.Helper()
		t0 := time.Now()
		f()
		if el := time.Since(t0); el > d {
			t.Errorf("%s: Wait returned after %v", what, el)
		}
	}
	within("interrupted before", 500*time.Millisecond, func() {
		s.Interrupt()
		if err := s.Wait(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	within("interrupted during", 2*time.Second, func() {
		time.AfterFunc(100*time.Millisecond, s.Interrupt)
		if err := s.Wait(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	within("timeout", 2*time.Second, func() {
		if err := s.Wait(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	})
	c := kernelUDP(t, r.pair, netip.AddrPortFrom(vethtest.UstackIPv4, udpPort))
	within("frame", 5*time.Second, func() {
		time.AfterFunc(100*time.Millisecond, func() { c.Write([]byte("wake")) })
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if err := s.Wait(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			descs := make([]xsk.Desc, 8)
			if n := s.Receive(descs); n > 0 {
				s.Recycle(descs[:n])
				return
			}
		}
		t.Error("no frame after Wait")
	})
}

// TestPrivilegedRebindAfterClose: a queue can be bound again at once after
// its socket and UMEM are closed, although the kernel frees the old
// socket's buffer pool (and with it the queue) on a work queue, later;
// a queue held by a live socket is still refused, after BusyWait.
func TestPrivilegedRebindAfterClose(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{})
	cfg := xsk.Config{Interface: p.Ustack.Link, FillSize: 32, RxSize: 32, TxSize: 32, CompletionSize: 32}
	err := p.Ustack.Do(func() error {
		u, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: 128})
		if err != nil {
			return err
		}
		defer u.Close()
		s, err := xsk.Open(u, cfg)
		if err != nil {
			return err
		}
		defer s.Close()
		u2, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: 64})
		if err != nil {
			return err
		}
		defer u2.Close()
		held := cfg
		held.BusyWait = 50 * time.Millisecond
		t0 := time.Now()
		s2, err := xsk.Open(u2, held)
		if err == nil {
			s2.Close()
			return errors.New("a second socket bound a held queue")
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("binding a held queue: %w, want EBUSY", err)
		}
		if el := time.Since(t0); el < held.BusyWait {
			return fmt.Errorf("binding a held queue failed after %v, before BusyWait %v", el, held.BusyWait)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Ustack.Do(func() error {
		for i := 0; i < 30; i++ {
			u, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: 64})
			if err != nil {
				return err
			}
			s, err := xsk.Open(u, cfg)
			if err != nil {
				u.Close()
				return fmt.Errorf("bind %d: %w", i, err)
			}
			if err := s.Close(); err != nil {
				return err
			}
			if err := u.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
