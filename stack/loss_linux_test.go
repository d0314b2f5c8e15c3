package stack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	echosrv "github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/vethtest"
)

var (
	lossRuns = flag.Int("lossruns", 2, "TestPrivilegedEchoUnderLoss: transfers per server and loss rate")
	lossPcap = flag.String("losspcap", "", "TestPrivilegedEchoUnderLoss: write the ustack server's capture (headers, 128 bytes a frame) to this file")
	lossCC   = flag.String("losscc", "", "TestPrivilegedEchoUnderLoss: the ustack server's congestion control (default: Config's)")
)

// TestPrivilegedEchoUnderLoss moves a 16 MiB echo (the kernel client
// writes and reads at once) through a ustack echo server and through a
// kernel echo server while an nftables rule on the kernel end of the veth
// drops random frames both ways, at 2% and at 5%. The servers sit behind
// the same rule in the same run: ustack on its own address, the kernel's
// echo server on the Ustack host's kernel address (the XDP program passes
// its traffic), once with the kernel's default congestion control and
// once with Reno (for ustack with -losscc reno). It checks SHA-256 and
// logs time-to-complete and the loss recovery counters beside each
// other; it asserts no timing (figures belong to benchmarks).
func TestPrivilegedEchoUnderLoss(t *testing.T) {
	vethtest.Tools(t, "nft", "ethtool")
	cfg := Config{CongestionControl: CongestionControl(*lossCC)}
	if *lossPcap != "" {
		f, err := os.Create(*lossPcap)
		if err != nil {
			t.Fatal(err)
		}
		// Registered first, so it runs after the stack's Close has
		// flushed the capture.
		t.Cleanup(func() { f.Close() })
		cfg.Capture = &Capture{W: f, SnapLen: 128, MaxBytes: 1 << 30}
	}
	p, s := newVethStack(t, vethtest.Options{}, cfg)
	for _, h := range []*vethtest.Host{p.Kernel, p.Ustack} {
		// Frames the rule sees are the frames on the wire: no TSO/GSO
		// super-frames dropped as one, no GRO merging before input.
		run(t, "ip", "netns", "exec", h.Namespace, "ethtool", "-K", h.Link, "tso", "off", "gso", "off", "gro", "off")
	}
	uln, err := s.Listen("tcp", netip.AddrPortFrom(vethtest.UstackIPv4, 7100).String())
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	go echosrv.ServeTCP(uln)
	var kln net.Listener
	if err := p.Ustack.Do(func() (err error) {
		kln, err = net.Listen("tcp", netip.AddrPortFrom(vethtest.UstackHostIPv4, 7100).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer kln.Close()
	go echosrv.ServeTCP(kln)
	// The same kernel server with Reno, the congestion control ustack
	// runs: the kernel's default (BBR here, CUBIC on most systems) keeps
	// its window through random loss, which Reno's halving does not.
	var rln net.Listener
	var defaultCC []byte
	if err := p.Ustack.Do(func() (err error) {
		defaultCC, _ = os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, "reno")
			}); err != nil {
				return err
			}
			return serr
		}}
		rln, err = lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(vethtest.UstackHostIPv4, 7101).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rln.Close()
	go echosrv.ServeTCP(rln)
	t.Logf("kernel echo server: congestion control %s; kernel-reno: reno", strings.TrimSpace(string(defaultCC)))

	const size = 16 << 20
	runs := *lossRuns
	if raceEnabled && !flagSet("lossruns") {
		// One transfer per server and rate finds races as well as two;
		// the plain test step runs both.
		runs = 1
	}
	rng := rand.New(rand.NewPCG(16, 16))
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	want := sha256.Sum256(data)

	for _, tc := range []struct {
		hooks string
		pct   int
	}{{"inet", 2}, {"inet", 5}, {"netdev", 2}, {"netdev", 5}} {
		hooks, pct := tc.hooks, tc.pct
		t.Run(fmt.Sprintf("%s/%d%%", hooks, pct), func(t *testing.T) {
			if hooks == "netdev" {
				// The kernel's TCP builds GSO packets even with gso
				// off and segments them after the egress hook; one
				// segment per packet has the rule drop frames, not
				// bursts of them.
				for _, h := range []*vethtest.Host{p.Kernel, p.Ustack} {
					run(t, "ip", "-n", h.Namespace, "link", "set", "dev", h.Link, "gso_max_segs", "1")
					defer run(t, "ip", "-n", h.Namespace, "link", "set", "dev", h.Link, "gso_max_segs", "65535")
				}
			}
			drops := lossRule(t, p.Kernel, hooks, pct)
			var times [3][]time.Duration
			for i := 0; i < runs; i++ {
				for j, srv := range []struct {
					name string
					addr net.Addr
					host *vethtest.Host // whose kernel counters to read
				}{{"ustack", uln.Addr(), nil}, {"kernel", kln.Addr(), p.Ustack}, {"kernel-reno", rln.Addr(), p.Ustack}} {
					before, after := s.Stats(), Stats{}
					var kb, ka map[string]int64
					if srv.host != nil {
						kb = kernelTCPStats(t, srv.host)
					}
					cb := kernelTCPStats(t, p.Kernel)
					d0 := drops()
					el := echoThrough(t, p, srv.addr.String(), data, want)
					d1 := drops()
					ca := kernelTCPStats(t, p.Kernel)
					after = s.Stats()
					var rec string
					if srv.host != nil {
						ka = kernelTCPStats(t, srv.host)
						rec = fmt.Sprintf("RTOs %d, fast retransmits %d, loss probes %d",
							ka["TCPTimeouts"]-kb["TCPTimeouts"], ka["TCPFastRetrans"]-kb["TCPFastRetrans"], ka["TCPLossProbes"]-kb["TCPLossProbes"])
					} else {
						rec = fmt.Sprintf("RTOs %d, fast retransmits %d, TLP recoveries %d, probes %d, retransmits %d, no TX frame %d",
							after.TCP.Timeouts-before.TCP.Timeouts, after.TCP.FastRetransmits-before.TCP.FastRetransmits, after.TCP.TLPRecoveries-before.TCP.TLPRecoveries,
							after.TCP.RecoveryProbes-before.TCP.RecoveryProbes, after.TCP.Retransmits-before.TCP.Retransmits, after.Queues[0].TxNoFrame-before.Queues[0].TxNoFrame)
					}
					t.Logf("%s %d%% loss, run %d, %s echo server: %v (dropped %d in, %d out; server %s; client RTOs %d)",
						hooks, pct, i+1, srv.name, el.Round(time.Millisecond), d1[0]-d0[0], d1[1]-d0[1], rec, ca["TCPTimeouts"]-cb["TCPTimeouts"])
					times[j] = append(times[j], el)
				}
			}
			t.Logf("%s %d%% loss: ustack %v, kernel %v, kernel-reno %v", hooks, pct, roundAll(times[0]), roundAll(times[1]), roundAll(times[2]))
		})
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// echoThrough sends data through the echo server at addr from the Kernel
// host, reading the echo while it writes, checks what comes back and
// returns the time from dial to the last byte.
func echoThrough(t *testing.T, p *vethtest.Pair, addr string, data []byte, want [sha256.Size]byte) time.Duration {
	t.Helper()
	start := time.Now()
	var c net.Conn
	if err := p.Kernel.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		werr <- err
	}()
	h := sha256.New()
	n, err := io.CopyN(h, c, int64(len(data)))
	el := time.Since(start)
	if err != nil {
		t.Fatalf("echo through %s: read %d of %d bytes: %v", addr, n, len(data), err)
	}
	if err := <-werr; err != nil {
		t.Fatalf("echo through %s: write: %v", addr, err)
	}
	if !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("echo through %s: sha256 differs", addr)
	}
	return el
}

// lossRule installs, in h's namespace, an nftables table that drops pct%
// of the TCP packets h receives and sends, and removes it when t ends.
// With hooks "inet" the rule sits on the input and output hooks: data
// the kernel's TCP sends and the rule drops is, for the kernel, a local
// transmit failure it sends again later, but a pure ACK the rule drops is
// lost as on the wire (Linux often acknowledges a whole flight in one
// ACK, so that is the flight's only ACK). With hooks "netdev" it sits on
// the ingress and egress hooks of h's veth end: loss on the wire both
// ways. The returned function
// reads the rule's drop counters (in, out).
func lossRule(t *testing.T, h *vethtest.Host, hooks string, pct int) func() [2]int64 {
	t.Helper()
	const table = "ustack_loss"
	in, out := "type filter hook input priority 0;", "type filter hook output priority 0;"
	family := "inet"
	if hooks == "netdev" {
		family = "netdev"
		in = fmt.Sprintf("type filter hook ingress device %s priority 0;", h.Link)
		out = fmt.Sprintf("type filter hook egress device %s priority 0;", h.Link)
	}
	rules := fmt.Sprintf(`table %[1]s %[2]s {
	chain in {
		%[3]s
		meta protocol { ip, ip6 } meta l4proto tcp numgen random mod 100 < %[5]d counter drop
	}
	chain out {
		%[4]s
		meta protocol { ip, ip6 } meta l4proto tcp numgen random mod 100 < %[5]d counter drop
	}
}
`, family, table, in, out, pct)
	cmd := exec.Command("ip", "netns", "exec", h.Namespace, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install nftables loss rule: %v: %s", err, out)
	}
	t.Cleanup(func() { run(t, "ip", "netns", "exec", h.Namespace, "nft", "delete", "table", family, table) })
	re := regexp.MustCompile(`counter packets (\d+)`)
	return func() [2]int64 {
		out, err := exec.Command("ip", "netns", "exec", h.Namespace, "nft", "list", "table", family, table).CombinedOutput()
		if err != nil {
			t.Fatalf("read nftables counters: %v: %s", err, out)
		}
		var c [2]int64
		for i, m := range re.FindAllSubmatch(out, 2) {
			c[i], _ = strconv.ParseInt(string(m[1]), 10, 64)
		}
		return c
	}
}

// kernelTCPStats reads the TcpExt counters of h's namespace.
func kernelTCPStats(t *testing.T, h *vethtest.Host) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	if err := h.Do(func() error {
		// thread-self: this thread is the one in h's namespace.
		f, err := os.Open("/proc/thread-self/net/netstat")
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			names := strings.Fields(sc.Text())
			if !sc.Scan() {
				break
			}
			vals := strings.Fields(sc.Text())
			if len(names) == 0 || names[0] != "TcpExt:" || len(vals) != len(names) {
				continue
			}
			for i := 1; i < len(names); i++ {
				m[names[i]], _ = strconv.ParseInt(vals[i], 10, 64)
			}
		}
		return sc.Err()
	}); err != nil {
		t.Fatalf("read kernel TCP counters: %v", err)
	}
	return m
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// flagSet reports whether the test flag name was given on the command
// line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
