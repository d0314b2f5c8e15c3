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
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	echosrv "github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/ustack-dev/ustack/xsk"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

var (
	ustack4 = netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4)
	ustack6 = netip.PrefixFrom(vethtest.UstackIPv6, vethtest.PrefixLen6)
)

// newVethStack builds a veth pair and runs ustack on its Ustack end with
// both test addresses.
func newVethStack(t testing.TB, opts vethtest.Options, cfg Config) (*vethtest.Pair, *Stack) {
	t.Helper()
	p := vethtest.NewT(t, opts)
	cfg.Interface = p.Ustack.Link
	cfg.Addrs = []netip.Prefix{ustack4, ustack6}
	cfg.Logf = t.Logf
	var s *Stack
	if err := p.Ustack.Do(func() (err error) { s, err = New(cfg); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	if st := s.Stats(); st.AttachMode != bpf.AttachNative {
		t.Fatalf("xdp attached in %v mode, want native on veth", st.AttachMode)
	}
	return p, s
}

// kernelDial dials from the Kernel host's namespace.
func kernelDial(ctx context.Context, p *vethtest.Pair, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := p.Kernel.Do(func() (err error) {
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

func pingPong(t *testing.T, c net.Conn, rounds int) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2000)
	for i := 0; i < rounds; i++ {
		msg := bytes.Repeat([]byte{byte('a' + i%26)}, 1+i*37%1400)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if !bytes.Equal(buf[:len(msg)], msg) {
			t.Fatalf("round %d: echo differs", i)
		}
	}
}

// TestPrivilegedKernelClientUstackServer runs echo sessions from a kernel
// client over IPv4 and IPv6, with the kernel end's TX checksum offload as
// a new veth pair has it (on: its segments carry partial checksums, which
// ustack accepts from a veth peer and counts) and off (full checksums).
func TestPrivilegedKernelClientUstackServer(t *testing.T) {
	for _, csumOff := range []bool{false, true} {
		t.Run(fmt.Sprintf("KernelTxChecksumOff=%v", csumOff), func(t *testing.T) {
			p, s := newVethStack(t, vethtest.Options{KernelTxChecksumOff: csumOff}, Config{})
			for _, a := range []netip.Addr{vethtest.UstackIPv4, vethtest.UstackIPv6} {
				ln, err := s.Listen("tcp", netip.AddrPortFrom(a, 7007).String())
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				echo(t, ln)
				c, err := kernelDial(context.Background(), p, "tcp", ln.Addr().String())
				if err != nil {
					t.Fatalf("kernel dial %v: %v", ln.Addr(), err)
				}
				pingPong(t, c, 200)
				c.Close()
			}
			st := s.Stats()
			if st.TCP.PassiveOpens < 2 || st.Steering[bpf.RedirectPort] == 0 || st.Steering[bpf.RedirectNeigh] == 0 {
				t.Errorf("stats after two echo sessions: %+v", st)
			}
			q := st.Queues[0]
			if st.TCP.ChecksumErrors != 0 || q.RxBadChecksum != 0 {
				t.Errorf("checksum errors: netstack %d, worker %d", st.TCP.ChecksumErrors, q.RxBadChecksum)
			}
			if partial := q.RxPartialChecksum; csumOff && partial != 0 || !csumOff && partial < 400 {
				t.Errorf("%d partial checksums accepted with the kernel's TX checksum offload off=%v", partial, csumOff)
			}
		})
	}
}

func TestPrivilegedUstackClientKernelServer(t *testing.T) {
	p, s := newVethStack(t, vethtest.Options{}, Config{})
	for _, a := range []netip.Addr{p.Kernel.IPv4, p.Kernel.IPv6} {
		var ln net.Listener
		if err := p.Kernel.Do(func() (err error) {
			ln, err = net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		echo(t, ln)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := s.DialContext(ctx, "tcp", ln.Addr().String())
		cancel()
		if err != nil {
			t.Fatalf("ustack dial %v: %v", ln.Addr(), err)
		}
		pingPong(t, c, 200)
		c.Close()
	}
}

func TestPrivilegedUDPEcho(t *testing.T) {
	p, s := newVethStack(t, vethtest.Options{}, Config{})
	pc, err := s.ListenPacket("udp", ":5353")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go echosrv.ServeUDP(pc)
	c, err := kernelDial(context.Background(), p, "udp", netip.AddrPortFrom(vethtest.UstackIPv4, 5353).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	for i := 0; i < 50; i++ {
		msg := []byte(fmt.Sprintf("udp %d", i))
		c.Write(msg)
		n, err := c.Read(buf)
		if err != nil || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("datagram %d: %q, %v", i, buf[:n], err)
		}
	}
}

// TestPrivilegedPing: the kernel peer pings ustack's addresses.
func TestPrivilegedPing(t *testing.T) {
	p, _ := newVethStack(t, vethtest.Options{}, Config{})
	for _, c := range []struct {
		network, listen string
		dst             netip.Addr
		typ, reply      icmp.Type
		proto           int
	}{
		{"ip4:icmp", "0.0.0.0", vethtest.UstackIPv4, ipv4.ICMPTypeEcho, ipv4.ICMPTypeEchoReply, 1},
		{"ip6:ipv6-icmp", "::", vethtest.UstackIPv6, ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply, 58},
	} {
		var conn *icmp.PacketConn
		if err := p.Kernel.Do(func() (err error) { conn, err = icmp.ListenPacket(c.network, c.listen); return err }); err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		got := 0
		for seq := 1; seq <= 5; seq++ {
			m := icmp.Message{Type: c.typ, Body: &icmp.Echo{ID: 0x5ca1, Seq: seq, Data: []byte("ustack ping")}}
			wb, _ := m.Marshal(nil)
			if _, err := conn.WriteTo(wb, &net.IPAddr{IP: c.dst.AsSlice()}); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			rb := make([]byte, 1500)
			for {
				n, from, err := conn.ReadFrom(rb)
				if err != nil {
					t.Fatalf("ping %v seq %d: %v", c.dst, seq, err)
				}
				rm, err := icmp.ParseMessage(c.proto, rb[:n])
				if err != nil || rm.Type != c.reply || from.(*net.IPAddr).IP.String() != c.dst.String() {
					continue // NDP and other ICMPv6 on the raw socket
				}
				if e, ok := rm.Body.(*icmp.Echo); ok && e.Seq == seq && string(e.Data) == "ustack ping" {
					got++
					break
				}
			}
		}
		if got != 5 {
			t.Errorf("%v: %d of 5 replies", c.dst, got)
		}
	}
}

// TestPrivilegedBulk64MiB moves 64 MiB each way at once between the kernel
// and ustack, on two connections (kernel→ustack and ustack→kernel), and
// compares SHA-256 at both ends. It runs with one P as well, where writers
// and the worker share a single P.
//
// The two directions use separate connections here;
// TestPrivilegedSaturatedEcho saturates one connection both ways.
func TestPrivilegedBulk64MiB(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			testBulk64MiB(t)
		})
	}
}

// sinkResult is what sinkEach read from one connection.
type sinkResult struct {
	sum [sha256.Size]byte
	n   int64
	err error
}

// sinkEach accepts one connection on each listener and sinks it, each
// with deadline d from its accept; the channel gets one result per
// listener as each ends.
func sinkEach(d time.Duration, lns ...net.Listener) <-chan sinkResult {
	out := make(chan sinkResult, len(lns))
	for _, ln := range lns {
		go func() {
			c, err := ln.Accept()
			if err != nil {
				out <- sinkResult{err: err}
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(d))
			sum, n, err := sink(c)
			out <- sinkResult{sum, n, err}
		}()
	}
	return out
}

func testBulk64MiB(t *testing.T) {
	testBulk(t, vethtest.Options{}, Config{Poll: Spin}, 64<<20, "tcp4")
}

// testBulk moves size bytes each way at once between the kernel and
// ustack (over "tcp4" or "tcp6") and checks SHA-256 at both ends. It
// returns the stack's counters afterwards.
func testBulk(t *testing.T, opts vethtest.Options, cfg Config, size int, network string) (*vethtest.Pair, *Stack) {
	p, s := newVethStack(t, opts, cfg)
	kernelAddr, ustackAddr := vethtest.KernelIPv4, vethtest.UstackIPv4
	if network == "tcp6" {
		kernelAddr, ustackAddr = vethtest.KernelIPv6, vethtest.UstackIPv6
	}
	rng := rand.New(rand.NewPCG(1, 1))
	data := make([]byte, size)
	for i := 0; i < size; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	want := sha256.Sum256(data)

	// kernel → ustack: a ustack listener sinks what the kernel sends.
	uln, err := s.Listen(network, ":9000")
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	// ustack → kernel: a kernel listener sinks what ustack sends.
	var kln net.Listener
	if err := p.Kernel.Do(func() (err error) {
		kln, err = net.Listen(network, netip.AddrPortFrom(kernelAddr, 9001).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer kln.Close()

	sunk := sinkEach(2*time.Minute, uln, kln)
	kc, err := kernelDial(context.Background(), p, network, netip.AddrPortFrom(ustackAddr, 9000).String())
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	uc, err := s.Dial(network, netip.AddrPortFrom(kernelAddr, 9001).String())
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	start := time.Now()
	sent := make(chan error, 2)
	for _, c := range []net.Conn{kc, uc} {
		go func(c net.Conn) {
			c.SetDeadline(time.Now().Add(2 * time.Minute))
			_, err := c.Write(data)
			if err == nil {
				err = c.(interface{ CloseWrite() error }).CloseWrite()
			}
			sent <- err
		}(c)
	}
	for i := 0; i < 2; i++ {
		if err := <-sent; err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	for i := 0; i < 2; i++ {
		g := <-sunk
		if g.err != nil {
			t.Fatalf("read: %v", g.err)
		}
		if g.n != int64(size) || g.sum != want {
			t.Fatalf("received %d bytes, sha256 match %v", g.n, g.sum == want)
		}
	}
	el := time.Since(start)
	t.Logf("%d MiB each way at once in %v (%.2f Gbit/s each way)", size>>20, el, float64(size*8)/el.Seconds()/1e9)
	return p, s
}

// TestPrivileged1000Connections opens 1000 concurrent kernel connections
// to a ustack echo server, all open at once, each echoing a message.
func TestPrivileged1000Connections(t *testing.T) {
	p, s := newVethStack(t, vethtest.Options{}, Config{})
	ln, err := s.Listen("tcp", ":9001")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echo(t, ln)
	const n = 1000
	conns := make([]net.Conn, n)
	addr := netip.AddrPortFrom(vethtest.UstackIPv4, 9001).String()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 100) // connection attempts in flight
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			c, err := kernelDial(context.Background(), p, "tcp", addr)
			<-sem
			if err != nil {
				errs <- fmt.Errorf("conn %d: %w", i, err)
				return
			}
			conns[i] = c
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Every connection is open now; each echoes its own message.
	var ewg sync.WaitGroup
	fail := make(chan error, n)
	for i, c := range conns {
		ewg.Add(1)
		go func(i int, c net.Conn) {
			defer ewg.Done()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			msg := []byte(fmt.Sprintf("connection %04d", i))
			buf := make([]byte, len(msg))
			if _, err := c.Write(msg); err != nil {
				fail <- err
				return
			}
			if _, err := io.ReadFull(c, buf); err != nil || !bytes.Equal(buf, msg) {
				fail <- fmt.Errorf("conn %d: %q %v", i, buf, err)
			}
		}(i, c)
	}
	ewg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
	// All have echoed and none is closed yet: ustack holds them all at
	// once. (Checked only now: a kernel dial returns before ustack has
	// processed the handshake's final ACK.)
	if est := s.Stats().TCP.CurrentEstablished; est < n {
		t.Fatalf("%d connections established in ustack, want %d", est, n)
	}
}

// TestPrivilegedHTTP serves an unmodified net/http server on a ustack
// listener to a Go http.Client in the kernel namespace.
func TestPrivilegedHTTP(t *testing.T) {
	p, s := newVethStack(t, vethtest.Options{}, Config{})
	ln, err := s.Listen("tcp", ":8080")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s from ustack", r.URL.Query().Get("name"))
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return kernelDial(ctx, p, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, host := range []string{"198.18.0.10:8080", "[2001:2::10]:8080"} {
		for i := 0; i < 20; i++ {
			resp, err := client.Get(fmt.Sprintf("http://%s/hello?name=k%d", host, i))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("hello k%d from ustack", i); resp.StatusCode != 200 || string(body) != want {
				t.Fatalf("GET %s: %d %q", host, resp.StatusCode, body)
			}
		}
	}
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	resp, err := client.Post("http://198.18.0.10:8080/upload", "application/octet-stream", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("%d %x", len(payload), sha256.Sum256(payload)); string(body) != want {
		t.Fatalf("upload: %q, want %q", body, want)
	}
}

// pinnedThreads counts the process's threads whose CPU affinity is one CPU,
// by that CPU (Cpus_allowed_list in /proc/self/task/*/status).
func pinnedThreads(t *testing.T) map[int]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]int{}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread exited
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				if cpu, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					m[cpu]++
				}
			}
		}
	}
	return m
}

// TestPrivilegedTwoQueues runs two workers, each pinned to a CPU, on a
// two-queue veth and checks that both carry traffic and that threads
// pinned to worker i's CPU appeared.
func TestPrivilegedTwoQueues(t *testing.T) {
	before := pinnedThreads(t)
	p, s := newVethStack(t, vethtest.Options{Queues: 2}, Config{Queues: 2, Pin: true})
	// Worker i pins itself to CPU i mod NumCPU once it starts.
	want := map[int]int{}
	for q := 0; q < 2; q++ {
		want[q%runtime.NumCPU()]++
	}
	pinned := func() (map[int]int, bool) {
		after := pinnedThreads(t)
		for cpu, n := range want {
			if after[cpu] < before[cpu]+n {
				return after, false
			}
		}
		return after, true
	}
	after, ok := pinned()
	for deadline := time.Now().Add(5 * time.Second); !ok && time.Now().Before(deadline); after, ok = pinned() {
		time.Sleep(10 * time.Millisecond)
	}
	if !ok {
		t.Errorf("threads pinned per CPU: %v before New, %v after; the workers should add %v", before, after, want)
	}
	ln, err := s.Listen("tcp", ":9002")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echo(t, ln)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		c, err := kernelDial(context.Background(), p, "tcp", netip.AddrPortFrom(vethtest.UstackIPv4, 9002).String())
		if err != nil {
			t.Fatal(err)
		}
		pingPong(t, c, 3)
		c.Close()
		st := s.Stats()
		if st.Queues[0].RxPackets > 0 && st.Queues[1].RxPackets > 0 && st.Queues[0].TxPackets > 0 && st.Queues[1].TxPackets > 0 {
			return
		}
	}
	t.Fatalf("queues did not both carry traffic: %+v", s.Stats().Queues)
}

func TestPrivilegedNewRejectsMisconfiguration(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{})
	for _, c := range []struct {
		cfg  Config
		want []error // all must match
		msg  string  // and the message must say this
	}{
		// The netlink error is kept, not only the sentinel.
		{Config{Interface: "nonexistent0", Addrs: []netip.Prefix{ustack4}}, []error{ErrConfig, xsk.ErrNoInterface}, "Link not found"},
		{Config{Interface: p.Ustack.Link, Addrs: []netip.Prefix{ustack4}, Queues: 2}, []error{ErrConfig}, "2 queues requested"}, // one-queue veth
		{Config{Interface: p.Ustack.Link}, []error{ErrConfig}, "no addresses"},
		{Config{Addrs: []netip.Prefix{ustack4}}, []error{ErrConfig}, "no interface"},
		{Config{Interface: p.Ustack.Link, Addrs: []netip.Prefix{ustack6, netip.PrefixFrom(vethtest.UstackHostIPv4, 24)}}, []error{ErrConfig}, "198.18.0.2 is the kernel's own address on " + p.Ustack.Link},
		{Config{Interface: p.Ustack.Link, Addrs: []netip.Prefix{netip.PrefixFrom(vethtest.UstackHostIPv6, 64)}}, []error{ErrConfig}, "2001:2::2 is the kernel's own address"},
	} {
		err := p.Ustack.Do(func() error {
			s, err := New(c.cfg)
			if err == nil {
				s.Close()
			}
			return err
		})
		for _, w := range c.want {
			if !errors.Is(err, w) {
				t.Errorf("New(%+v) = %v, want %v", c.cfg, err, w)
			}
		}
		if err != nil && !strings.Contains(err.Error(), c.msg) {
			t.Errorf("New(%+v) = %v, want it to say %q", c.cfg, err, c.msg)
		}
	}
}

// TestPrivilegedSaturatedEcho runs the workload that could stall
// upstream netstack for good: a kernel client writes 64 MiB to a ustack
// echo server (which reads, then writes back what it read) while reading
// the echo concurrently, so both directions are saturated and both
// receive windows fill. 20 runs on fresh connections, alternating
// GOMAXPROCS 1 and 2, SHA-256 of what was sent against what came back.
// Upstream netstack stalls here for good within a run or two: it
// shrinks the receive window and drops segments carrying ACKs; the
// carried netstack keeps the right edge where it was advertised (RFC
// 9293 §3.8.6.2.2, Linux's tcp_select_window), and it passes every run.
func TestPrivilegedSaturatedEcho(t *testing.T) {
	p, s := newVethStack(t, vethtest.Options{}, Config{Poll: Spin})
	ln, err := s.Listen("tcp", ":9002")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go echosrv.ServeTCP(ln)

	const size = 64 << 20
	runs := 20
	if raceEnabled {
		// The race detector looks for races, which a few runs show as
		// well as twenty; the plain test step runs all twenty for the
		// stall.
		runs = 4
	}
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	want := sha256.Sum256(data)
	for run := 0; run < runs; run++ {
		procs := 1 + run%2
		prev := runtime.GOMAXPROCS(procs)
		start := time.Now()
		c, err := kernelDial(context.Background(), p, "tcp", netip.AddrPortFrom(vethtest.UstackIPv4, 9002).String())
		if err != nil {
			runtime.GOMAXPROCS(prev)
			t.Fatalf("run %d: %v", run, err)
		}
		c.SetDeadline(time.Now().Add(60 * time.Second))
		wrote := make(chan error, 1)
		go func() {
			// Odd-sized writes, so segment boundaries are not aligned to
			// the window scale unit.
			var err error
			for off := 0; off < size && err == nil; off += 100_003 {
				_, err = c.Write(data[off:min(off+100_003, size)])
			}
			wrote <- err
		}()
		sum, n, rerr := sink(io.LimitReader(c, size))
		werr := <-wrote
		c.Close()
		runtime.GOMAXPROCS(prev)
		if werr != nil || rerr != nil {
			t.Fatalf("run %d (GOMAXPROCS=%d): write: %v, read after %d of %d bytes: %v (stalled?)", run, procs, werr, n, size, rerr)
		}
		if n != size || sum != want {
			t.Fatalf("run %d: echoed %d bytes, sha256 match %v", run, n, sum == want)
		}
		t.Logf("run %d (GOMAXPROCS=%d): 64 MiB each way in %v", run, procs, time.Since(start).Round(time.Millisecond))
	}
}
