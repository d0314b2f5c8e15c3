package stack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	echosrv "github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/stack/internal/link"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/ustack-dev/ustack/xsk"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		// A test re-executed this binary as a server process.
		os.Exit(runChild(role))
	}
	os.Exit(vethtest.Main(m, func() error {
		if n := xsk.OpenSockets(); n != 0 {
			return fmt.Errorf("%d AF_XDP sockets left open", n)
		}
		return nil
	}))
}

var (
	memA4 = netip.MustParsePrefix("198.18.1.1/24")
	memB4 = netip.MustParsePrefix("198.18.1.2/24")
	memA6 = netip.MustParsePrefix("2001:2:0:1::1/64")
	memB6 = netip.MustParsePrefix("2001:2:0:1::2/64")
)

// fakeOwner records the owned-ports table as the XDP program would hold it.
type fakeOwner struct {
	mu    sync.Mutex
	ports map[portKey]bool
}

func (f *fakeOwner) OwnPort(a netip.Addr, proto bpf.Protocol, port uint16) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := portKey{a, proto, port}
	if f.ports[k] {
		return fmt.Errorf("port %v owned twice", k)
	}
	f.ports[k] = true
	return nil
}

func (f *fakeOwner) DisownPort(a netip.Addr, proto bpf.Protocol, port uint16) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ports, portKey{a, proto, port})
	return nil
}

func (f *fakeOwner) has(k portKey) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ports[k]
}

func (f *fakeOwner) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ports)
}

type memPair struct {
	a, b       *Stack
	pa, pb     *memEnd
	ownA, ownB *fakeOwner
}

func newMemPair(t testing.TB, poll PollPolicy) *memPair {
	t.Helper()
	return newMemPairWith(t, poll, nil)
}

// newMemPairWith is newMemPair with B's configuration adjusted by cfgB.
func newMemPairWith(t testing.TB, poll PollPolicy, cfgB func(*Config)) *memPair {
	t.Helper()
	return newMemPairCfg(t, poll, nil, cfgB)
}

// newMemPairCfg is newMemPair with A's and B's configurations adjusted by
// cfgA and cfgB (either may be nil).
func newMemPairCfg(t testing.TB, poll PollPolicy, cfgA, cfgB func(*Config)) *memPair {
	t.Helper()
	pa, pb, err := newMemWire(1024, 2048)
	if err != nil {
		t.Fatal(err)
	}
	mp := &memPair{pa: pa, pb: pb, ownA: &fakeOwner{ports: map[portKey]bool{}}, ownB: &fakeOwner{ports: map[portKey]bool{}}}
	mk := func(p *memEnd, addrs []netip.Prefix, mac net.HardwareAddr, own *fakeOwner) *Stack {
		cfg := Config{Interface: "mem", Addrs: addrs, Poll: poll}
		if p == pb && cfgB != nil {
			cfgB(&cfg)
		}
		if p == pa && cfgA != nil {
			cfgA(&cfg)
		}
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
	mp.a = mk(pa, []netip.Prefix{memA4, memA6}, net.HardwareAddr{2, 0, 0, 0, 1, 1}, mp.ownA)
	mp.b = mk(pb, []netip.Prefix{memB4, memB6}, net.HardwareAddr{2, 0, 0, 0, 1, 2}, mp.ownB)
	return mp
}

// echo serves ln with the echo server the demo and benchmark use.
func echo(t testing.TB, ln net.Listener) { go echosrv.ServeTCP(ln) }

// acceptEach accepts connections on ln until it closes, and serves each
// on a goroutine of its own.
func acceptEach(ln net.Listener, serve func(net.Conn)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
}

func TestMemTCPEcho(t *testing.T) {
	for _, policy := range []PollPolicy{Adaptive, Spin, Blocking} {
		for _, fam := range []struct {
			network string
			addr    netip.Prefix
		}{{"tcp4", memB4}, {"tcp6", memB6}} {
			t.Run(policy.String()+"/"+fam.network, func(t *testing.T) {
				mp := newMemPair(t, policy)
				ln, err := mp.b.Listen(fam.network, netip.AddrPortFrom(fam.addr.Addr(), 7).String())
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				echo(t, ln)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				c, err := mp.a.DialContext(ctx, fam.network, ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 100)
				for i := 0; i < 50; i++ {
					msg := []byte(fmt.Sprintf("message %d", i))
					if _, err := c.Write(msg); err != nil {
						t.Fatal(err)
					}
					if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(buf[:len(msg)], msg) {
						t.Fatalf("echo %q, want %q", buf[:len(msg)], msg)
					}
				}
			})
		}
	}
}

// TestMemBulkWithLoss moves 8 MiB each way through a wire that drops 1% of
// frames in both directions and checks SHA-256 on both ends, with each
// congestion control.
func TestMemBulkWithLoss(t *testing.T) {
	for _, cc := range []CongestionControl{CongestionReno, CongestionCubic, CongestionBBR} {
		t.Run(string(cc), func(t *testing.T) { memBulkWithLoss(t, cc) })
	}
}

func memBulkWithLoss(t *testing.T, cc CongestionControl) {
	set := func(c *Config) { c.CongestionControl = cc }
	mp := newMemPairCfg(t, Adaptive, set, set)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(7, 7))
	drop := func([]byte) bool { mu.Lock(); defer mu.Unlock(); return rng.IntN(100) == 0 }
	mp.pa.setDrop(drop)
	mp.pb.setDrop(drop)
	ln, err := mp.b.Listen("tcp", ":9")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echo(t, ln)
	c, err := mp.a.Dial("tcp", netip.AddrPortFrom(memB4.Addr(), 9).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	const size = 8 << 20
	data := make([]byte, size)
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
		t.Fatalf("%v\nA %+v\nB %+v", err, mp.a.Stats(), mp.b.Stats())
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatalf("sha256 mismatch")
	}
	if r := mp.a.Stats().TCP.Retransmits + mp.b.Stats().TCP.Retransmits; r == 0 {
		t.Error("1% loss caused no retransmissions: the fault injector did nothing")
	}
}

// sink reads c to its end and returns the SHA-256 and length of what it
// read.
func sink(c io.Reader) ([sha256.Size]byte, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, c)
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum, n, err
}

// TestMemCorruption flips a bit in 1% of frames A sends: the worker's
// checksum verification must catch every corrupted TCP segment (counted,
// dropped before netstack, retransmitted), so 4 MiB still arrive intact.
func TestMemCorruption(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(9, 9))
	mp.pa.setMangle(func(f []byte) {
		mu.Lock()
		defer mu.Unlock()
		if len(f) > 60 && rng.IntN(100) == 0 {
			f[54+rng.IntN(len(f)-54)] ^= 1 << rng.IntN(8) // a payload bit
		}
	})
	ln, err := mp.b.Listen("tcp", ":10")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan [sha256.Size]byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s, _, _ := sink(c)
		got <- s
	}()
	c, err := mp.a.Dial("tcp", netip.AddrPortFrom(memB4.Addr(), 10).String())
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case s := <-got:
		if s != sha256.Sum256(data) {
			t.Fatal("corrupted data delivered")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("transfer did not finish")
	}
	st := mp.b.Stats()
	// Caught once, in the worker: no corrupted segment reaches netstack.
	if st.Queues[0].RxBadChecksum == 0 || st.TCP.ChecksumErrors != 0 {
		t.Errorf("corruption caught by the worker %d times (want > 0), by netstack %d times (want 0)", st.Queues[0].RxBadChecksum, st.TCP.ChecksumErrors)
	}
}

// TestMemTrustedChecksumNotReverified: a packet the link endpoint marks
// as verified is not verified again by netstack. B trusts received
// checksums (TrustRxChecksum), and every TCP segment A sends carries a
// wrong checksum over intact data, so B accepts the connection and the
// data only if netstack keeps the mark. Upstream's nic.go overwrites the
// per-packet mark with the link's capability.
func TestMemTrustedChecksumNotReverified(t *testing.T) {
	mp := newMemPairWith(t, Spin, func(c *Config) { c.TrustRxChecksum = true })
	mp.pa.setMangle(func(f []byte) {
		if len(f) >= 14+20+20 && f[12] == 0x08 && f[13] == 0x00 && f[14+9] == 6 {
			f[14+20+16] ^= 0x55 // the TCP checksum, high byte
		}
	})
	ln, err := mp.b.Listen("tcp4", ":11")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echo(t, ln)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := mp.a.DialContext(ctx, "tcp4", netip.AddrPortFrom(memB4.Addr(), 11).String())
	if err != nil {
		t.Fatalf("dial: %v (netstack rejected segments the worker marked verified)", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := bytes.Repeat([]byte("trusted "), 1000)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("echo differs")
	}
	if n := mp.b.Stats().TCP.ChecksumErrors; n != 0 {
		t.Fatalf("netstack counted %d checksum errors on packets marked verified", n)
	}
}

func TestMemUDP(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	pc, err := mp.b.ListenPacket("udp6", "[2001:2:0:1::2]:53")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go echosrv.ServeUDP(pc)
	c, err := mp.a.Dial("udp", "[2001:2:0:1::2]:53")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	for i := 0; i < 20; i++ {
		msg := bytes.Repeat([]byte{byte(i)}, 1+i*50)
		c.Write(msg)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatalf("datagram %d mangled", i)
		}
	}
}

// TestMemPortsFollowSockets: listening, dialing and accepting add entries
// to the owned-ports table; closing removes them once the connection has
// finished closing.
func TestMemPortsFollowSockets(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	ln, err := mp.b.Listen("tcp4", ":8080")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	if !mp.ownB.has(portKey{memB4.Addr(), bpf.TCP, 8080}) {
		t.Fatalf("listening port not owned: %v", mp.ownB.ports)
	}
	c, err := mp.a.Dial("tcp4", "198.18.1.2:8080")
	if err != nil {
		t.Fatal(err)
	}
	local := c.LocalAddr().(*net.TCPAddr).AddrPort()
	if !mp.ownA.has(portKey{memA4.Addr(), bpf.TCP, local.Port()}) {
		t.Fatalf("dialing port %d not owned: %v", local.Port(), mp.ownA.ports)
	}
	c.Write([]byte("x"))
	c.Read(make([]byte, 1))
	ln.Close()
	// The accepted connection still holds the listening port.
	if mp.ownB.count() != 1 {
		t.Fatalf("after listener close, B owns %v, want the accepted connection's port", mp.ownB.ports)
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for (mp.ownA.count() > 0 || mp.ownB.count() > 0) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if mp.ownA.count() != 0 || mp.ownB.count() != 0 {
		t.Fatalf("ports still owned after close: A %v, B %v", mp.ownA.ports, mp.ownB.ports)
	}
}

func TestMemBadInput(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	var addrErr *net.AddrError
	var netErr net.UnknownNetworkError
	for _, c := range []struct {
		network, addr string
		is            func(error) bool
	}{
		{"tcp", "example.com:80", func(err error) bool { return errors.Is(err, ErrAddress) }},
		{"tcp", "198.18.1.2", func(err error) bool { return errors.As(err, &addrErr) }}, // no port
		{"tcp", "198.18.1.2:99999", func(err error) bool { return errors.Is(err, strconv.ErrRange) }},
		{"sctp", "198.18.1.2:80", func(err error) bool { return errors.As(err, &netErr) }},
		{"tcp", "198.18.1.2:0", func(err error) bool { return errors.Is(err, ErrAddress) }},
	} {
		conn, err := mp.a.Dial(c.network, c.addr)
		if err == nil {
			conn.Close()
		}
		if !c.is(err) {
			t.Errorf("Dial(%q, %q) = %v, not the expected error", c.network, c.addr, err)
		}
	}
	if _, err := mp.a.Listen("tcp", "198.18.9.9:80"); !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("listen on a foreign address: %v, want EADDRNOTAVAIL", err)
	}
	if _, err := mp.a.Listen("udp", ":80"); !errors.As(err, &netErr) {
		t.Errorf("Listen with udp: %v, want UnknownNetworkError", err)
	}
	if _, err := mp.a.ListenPacket("tcp", ":80"); !errors.As(err, &netErr) {
		t.Errorf("ListenPacket with tcp: %v, want UnknownNetworkError", err)
	}
	ln, err := mp.b.Listen("tcp", ":81")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closing, err := mp.b.Listen("tcp", ":83")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		_, err := closing.Accept()
		accepted <- err
	}()
	time.Sleep(50 * time.Millisecond)
	closing.Close()
	select {
	case err := <-accepted:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Accept still blocked after Close")
	}
	if _, err := mp.b.Listen("tcp", ":81"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second listen on :81: %v, want EADDRINUSE", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := mp.a.DialContext(ctx, "tcp", "198.18.1.2:82"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial closed port: %v, want ECONNREFUSED", err)
	}
	mp.a.Close()
	if _, err := mp.a.Dial("tcp", "198.18.1.2:81"); !errors.Is(err, ErrClosed) {
		t.Errorf("dial on closed stack: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := netip.MustParsePrefix("198.18.0.10/24")
	for _, c := range []Config{
		{},
		{Addrs: []netip.Prefix{good, good}},
		{Addrs: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}},
		{Addrs: []netip.Prefix{good}, Queues: 100},
		{Addrs: []netip.Prefix{good}, RingSize: 1000},
		{Addrs: []netip.Prefix{good}, RxRingSize: 3000},
		{Addrs: []netip.Prefix{good}, RxRingSize: 1 << 17},
		{Addrs: []netip.Prefix{good}, FrameSize: 3000},
		{Addrs: []netip.Prefix{good}, CongestionControl: "vegas"},
		{Addrs: []netip.Prefix{good}, Poll: PollPolicy(9)},
		{Addrs: []netip.Prefix{good}, Gateway4: netip.MustParseAddr("2001:2::1")},
	} {
		c.setDefaults()
		if err := c.validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
	if _, err := ParsePollPolicy("busy"); err == nil {
		t.Error("ParsePollPolicy accepted busy")
	}
	for _, v := range []string{"bbr", "reno", "cubic", "vegas", "BBR", ""} {
		ok := v == "bbr" || v == "reno" || v == "cubic"
		cc, err := ParseCongestionControl(v)
		if ok != (err == nil) || err != nil && !errors.Is(err, ErrConfig) || ok && string(cc) != v {
			t.Errorf("ParseCongestionControl(%q) = %q, %v", v, cc, err)
		}
	}
	var d Config
	d.setDefaults()
	if d.CongestionControl != CongestionBBR {
		t.Errorf("default congestion control %q, want bbr", d.CongestionControl)
	}
}

// TestConfigUMEMLayout: the UMEM a queue pins, as Config lays it out for
// an MTU: 2 KiB frames where an MTU-sized frame fits one, DefaultUMEMSize
// by default with RingSize frames of it to transmit, the old sizing when
// only RxRingSize is given, and an error when the UMEM cannot hold the
// rings.
func TestConfigUMEMLayout(t *testing.T) {
	good := []netip.Prefix{netip.MustParsePrefix("198.18.0.10/24")}
	for _, tc := range []struct {
		name                       string
		cfg                        Config
		mtu                        uint32
		frame, rx, tx, ring, bytes int
	}{
		{"default-1500", Config{}, 1500, 2048, 7168, 1024, 8192, DefaultUMEMSize},
		{"default-1778", Config{}, 1778, 2048, 7168, 1024, 8192, DefaultUMEMSize},
		{"default-1779", Config{}, 1779, 4096, 3072, 1024, 4096, DefaultUMEMSize},
		{"default-9000", Config{}, 9000, 4096, 3072, 1024, 4096, DefaultUMEMSize},
		{"4-MiB", Config{UMEMSize: 4 << 20}, 1500, 2048, 1024, 1024, 1024, 4 << 20},
		{"odd-size", Config{UMEMSize: 4<<20 + 1000}, 1500, 2048, 1024, 1024, 1024, 4 << 20},
		{"rx-ring-only", Config{RxRingSize: 128, RingSize: 64}, 1500, 2048, 128, 64, 128, 192 * 2048},
		{"rx-ring-4k", Config{RxRingSize: 16384, FrameSize: 4096}, 1500, 4096, 16384, 1024, 16384, 17408 * 4096},
		{"both", Config{UMEMSize: 8 << 20, RxRingSize: 4096}, 1500, 2048, 3072, 1024, 4096, 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Addrs = good
			c.setDefaults()
			if err := c.validate(); err != nil {
				t.Fatal(err)
			}
			l, err := c.layout(tc.mtu)
			if err != nil {
				t.Fatal(err)
			}
			if int(l.frameSize) != tc.frame || int(l.rxFrames) != tc.rx || int(l.txFrames) != tc.tx || int(c.RxRingSize) != tc.ring || c.UMEMSize != tc.bytes || l.size() != tc.bytes {
				t.Errorf("frames of %d bytes, %d rx, %d tx, rx ring %d, %d bytes; want %d, %d, %d, %d, %d",
					l.frameSize, l.rxFrames, l.txFrames, c.RxRingSize, c.UMEMSize, tc.frame, tc.rx, tc.tx, tc.ring, tc.bytes)
			}
			if again, err := c.layout(tc.mtu); err != nil || again != l {
				t.Errorf("laid out again: %+v, %v; want %+v", again, err, l)
			}
		})
	}
	for _, c := range []Config{
		{UMEMSize: 1 << 20},                    // 512 frames: not 1024 to transmit
		{UMEMSize: 4 << 20, RxRingSize: 8192},  // 1024 to receive: under half the fill ring
		{UMEMSize: 2 << 20, RingSize: 64},      // fine
		{UMEMSize: -1},                         // validate
		{UMEMSize: maxUMEMSize + 1, Queues: 1}, // validate
	} {
		c.Addrs = good
		c.setDefaults()
		err := c.validate()
		if err == nil {
			_, err = c.layout(1500)
		}
		if ok := c.UMEMSize == 2<<20; ok != (err == nil) {
			t.Errorf("UMEMSize %d, RxRingSize %d, RingSize %d: %v", c.UMEMSize, c.RxRingSize, c.RingSize, err)
		}
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("%v, want ErrConfig", err)
		}
	}
}

// TestPollPolicyIsLinks: the Stack hands its PollPolicy to the link
// endpoint by conversion, so the two enumerations must agree.
func TestPollPolicyIsLinks(t *testing.T) {
	for p, want := range map[PollPolicy]link.Poll{Adaptive: link.Adaptive, Spin: link.Spin, Blocking: link.Blocking} {
		if got := link.Poll(p); got != want {
			t.Errorf("%v is link.Poll(%d), want %d", p, got, want)
		}
	}
}
