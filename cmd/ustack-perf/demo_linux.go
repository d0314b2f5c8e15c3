package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ustack-dev/ustack/internal/child"
	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/qp"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

// demoRoleEnv names a demo child's role (child.RoleServer or
// child.RoleClient). The demo runs each server stack and each test's
// client as this binary again, a process of its own, placed as the
// benchmark places them.
const demoRoleEnv = "USTACK_PERF_DEMO_ROLE"

// Ports of a demo server: queue pairs, TCP echo, TCP discard.
const (
	demoQPPort   = 18515
	demoEchoPort = 7000
	demoBulkPort = 7001
)

// latTests are the demo's latency tests; write_lat/handler is write_lat
// answered from the queue pairs' OnInput handlers, where each Write lands
// (perftest.Params.Handler).
var latTests = []string{"write_lat", "write_lat/handler", "send_lat", "read_lat", "atomic_lat"}

// contender is one server stack in the demo, with what it measured.
type contender struct {
	name    string
	lat     map[string][]time.Duration
	bw      perftest.Result
	tcpRTT  time.Duration // TCP ping-pong p50, same size
	tcpBulk float64       // MiB/s
}

// demoResult is what a demo client reports, as a RESULT line of JSON:
// a queue-pair test's result, or a TCP workload's figure.
type demoResult struct {
	QP   perftest.Result `json:"qp"`
	RTT  time.Duration   `json:"rtt,omitempty"`   // TCP ping-pong p50
	MiBs float64         `json:"mib_s,omitempty"` // TCP bulk
}

func runDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	size := fs.Int("size", 64, "latency tests' message `bytes`")
	iters := fs.Int("iters", 10000, "latency tests' `iterations`")
	bwSize := fs.Int("bw-size", 65536, "write_bw message `bytes`")
	bwIters := fs.Int("bw-iters", 5000, "write_bw `iterations`")
	postList := fs.Int("post-list", 4, "write_bw `requests` posted per PostSend call (4 × 64 KiB: the 256 KiB the bulk transfer writes per call)")
	duration := fs.Duration("duration", 2*time.Second, "TCP ping-pong and bulk `time` per stack")
	pollFlag := fs.String("poll", "adaptive", "ustack worker polling `policy`: spin, adaptive or blocking (adaptive measured faster for queue pairs on 2 CPUs: a spinning worker takes the CPU their goroutines need)")
	spin := fs.Int("spin", perftest.SpinLimit, "`checks` of memory or a CQ before a waiter blocks")
	shared := fs.Bool("shared", false, "let the scheduler place servers and clients (default: the benchmark's two-hosts placement, servers on the last CPU, clients on the others)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *duration <= 0 || *duration > 10*time.Minute {
		return fmt.Errorf("-duration %v: want (0, 10m]", *duration)
	}
	for _, p := range []perftest.Params{{Test: "write_lat", Size: *size, Iters: *iters}, {Test: "write_bw", Size: *bwSize, Iters: *bwIters, PostList: *postList}} {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	poll, err := stack.ParsePollPolicy(*pollFlag)
	if err != nil {
		return err
	}
	var pl child.Placement
	if !*shared {
		if pl, err = child.OwnTwoHosts(); errors.Is(err, child.ErrOneCPU) {
			return fmt.Errorf("%w; run with -shared to let the scheduler place servers and clients on the one CPU", err)
		} else if err != nil {
			return err
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w (running as uid %d)", stack.ErrPermission, os.Geteuid())
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	pair, err := vethtest.New(vethtest.Options{})
	if err != nil {
		return err
	}
	defer pair.Close()
	fmt.Printf("topology: namespace %s (clients, kernel %v) ⟷ veth ⟷ namespace %s (servers: kernel %v, ustack %v)\n",
		pair.Kernel.Namespace, pair.Kernel.IPv4, pair.Ustack.Namespace, pair.Ustack.IPv4, vethtest.UstackIPv4)
	fmt.Printf("placement: %s; every server and client a process of its own\n", pl)
	fmt.Printf("clients: kernel TCP; servers: the kernel's TCP, then ustack (%v polling)\n\n", poll)
	spinArg := []string{"-spin", strconv.Itoa(*spin)}

	measure := func(ctx context.Context, c *contender, host netip.Addr) error {
		srv, err := child.Start(exe, pair.Ustack, pl, demoRoleEnv, child.RoleServer, nil, append([]string{"-stack", c.name, "-iface", pair.Ustack.Link, "-poll", *pollFlag}, spinArg...)...)
		if err != nil {
			return err
		}
		defer srv.Stop()
		if line, err := srv.ReadLine(30 * time.Second); err != nil || line != "READY" {
			return fmt.Errorf("%s server: %q, %v", c.name, line, err)
		}
		run := func(args ...string) (demoResult, error) {
			if err := ctx.Err(); err != nil {
				return demoResult{}, err
			}
			cl, err := child.Start(exe, pair.Kernel, pl, demoRoleEnv, child.RoleClient, nil, append(append([]string{"-host", host.String()}, spinArg...), args...)...)
			if err != nil {
				return demoResult{}, err
			}
			defer cl.Stop()
			line, err := cl.ReadLine(*duration + 2*time.Minute)
			var r demoResult
			if err == nil {
				rest, ok := strings.CutPrefix(line, "RESULT ")
				if !ok || json.Unmarshal([]byte(rest), &r) != nil {
					err = fmt.Errorf("unexpected %q", line)
				}
			}
			return r, err
		}
		c.lat = map[string][]time.Duration{}
		fmt.Printf("%-7s", c.name)
		for _, test := range latTests {
			name, mode, _ := strings.Cut(test, "/")
			sz := *size
			if test == "atomic_lat" {
				sz = 8
			}
			r, err := run("-test", name, "-size", strconv.Itoa(sz), "-iters", strconv.Itoa(*iters), "-handler="+strconv.FormatBool(mode == "handler"))
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.name, test, err)
			}
			c.lat[test] = r.QP.Lat
			fmt.Printf(" %s %s;", test, fmtUS(median(r.QP.Lat)))
		}
		r, err := run("-test", "write_bw", "-size", strconv.Itoa(*bwSize), "-iters", strconv.Itoa(*bwIters), "-post-list", strconv.Itoa(*postList))
		if err != nil {
			return fmt.Errorf("%s write_bw: %w", c.name, err)
		}
		c.bw = r.QP
		fmt.Printf(" write_bw %.0f MiB/s;", float64(c.bw.Bytes)/c.bw.Elapsed.Seconds()/(1<<20))
		if r, err = run("-tcp", "pingpong", "-size", strconv.Itoa(*size), "-duration", duration.String()); err != nil {
			return fmt.Errorf("%s TCP ping-pong: %w", c.name, err)
		}
		c.tcpRTT = r.RTT
		fmt.Printf(" TCP ping-pong %s;", fmtUS(c.tcpRTT))
		if r, err = run("-tcp", "bulk", "-duration", duration.String()); err != nil {
			return fmt.Errorf("%s TCP bulk: %w", c.name, err)
		}
		c.tcpBulk = r.MiBs
		fmt.Printf(" TCP bulk %.0f MiB/s\n", c.tcpBulk)
		return srv.Stop()
	}

	// The kernel first, before the XDP program is attached.
	kernel, ustack := &contender{name: "kernel"}, &contender{name: "ustack"}
	if err := measure(ctx, kernel, vethtest.UstackHostIPv4); err != nil {
		return err
	}
	if err := measure(ctx, ustack, vethtest.UstackIPv4); err != nil {
		return err
	}

	for _, c := range []*contender{kernel, ustack} {
		fmt.Printf("\n%s TCP server, queue pairs (perftest columns; *_lat of write and send are half the round trip, as perftest reports):\n", c.name)
		fmt.Println(" test              " + perftest.LatHeader)
		for _, test := range latTests {
			sz := *size
			if test == "atomic_lat" {
				sz = 8
			}
			fmt.Printf(" %-17s %s\n", test, perftest.LatRow(sz, *iters, c.lat[test]))
		}
		fmt.Println(" test              " + perftest.BwHeader)
		fmt.Printf(" %-17s %s\n", "write_bw", perftest.BwRow(*bwSize, *bwIters, c.bw))
	}
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "server\twrite_lat RTT p50\tratio\twith handlers\tratio\tTCP ping-pong RTT p50\twrite_bw MiB/s\tTCP bulk MiB/s\tratio\t\n")
	for _, c := range []*contender{kernel, ustack} {
		rtt := 2 * median(c.lat["write_lat"])
		hrtt := 2 * median(c.lat["write_lat/handler"])
		bw := float64(c.bw.Bytes) / c.bw.Elapsed.Seconds() / (1 << 20)
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%.2f\t%s\t%.0f\t%.0f\t%.2f\t\n", c.name, fmtUS(rtt), float64(rtt)/float64(c.tcpRTT),
			fmtUS(hrtt), float64(hrtt)/float64(c.tcpRTT), fmtUS(c.tcpRTT), bw, c.tcpBulk, bw/c.tcpBulk)
	}
	tw.Flush()
	fmt.Printf("\nustack write_lat RTT / kernel TCP ping-pong RTT: %.2f (with handlers %.2f)\n",
		float64(2*median(ustack.lat["write_lat"]))/float64(kernel.tcpRTT), float64(2*median(ustack.lat["write_lat/handler"]))/float64(kernel.tcpRTT))
	fmt.Println("write_lat RTT is twice perftest's t_typical; TCP figures are 64-byte echo ping-pong and single-flow bulk to the same server stack.")
	where := "two hosts: servers on a CPU of their own, clients on the others (the benchmark's placement of record)"
	if !pl.Pinned() {
		where = "shared: the scheduler placed servers and clients, so a client may share a CPU with its server (-shared)"
	}
	fmt.Printf("Placement: %s; each server and client a process of its own.\n", where)
	return nil
}

// maybeRunDemoRole runs the demo child role named in the environment, if
// any, and exits.
func maybeRunDemoRole() {
	role := child.Role(os.Getenv(demoRoleEnv))
	if role == "" {
		return
	}
	var err error
	switch role {
	case child.RoleServer:
		err = demoServe(os.Args[1:])
	case child.RoleClient:
		err = demoClient(os.Args[1:])
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ustack-perf demo %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// demoServe serves queue-pair tests, TCP echo and TCP discard over the
// kernel or ustack until stdin closes, after printing READY.
func demoServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	which := fs.String("stack", "kernel", "kernel or ustack")
	iface := fs.String("iface", "", "interface")
	pollFlag := fs.String("poll", "adaptive", "ustack polling policy")
	fs.IntVar(&perftest.SpinLimit, "spin", perftest.SpinLimit, "checks before a waiter blocks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	listen, host := net.Listen, vethtest.UstackHostIPv4
	switch *which {
	case "kernel":
	case "ustack":
		poll, err := stack.ParsePollPolicy(*pollFlag)
		if err != nil {
			return err
		}
		s, err := stack.New(stack.Config{Interface: *iface, Poll: poll,
			Addrs: []netip.Prefix{netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4)}})
		if err != nil {
			return err
		}
		defer s.Close()
		listen, host = s.Listen, vethtest.UstackIPv4
	default:
		return fmt.Errorf("-stack %q: want kernel or ustack", *which)
	}
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for _, port := range []uint16{demoQPPort, demoEchoPort, demoBulkPort} {
		ln, err := listen("tcp", netip.AddrPortFrom(host, port).String())
		if err != nil {
			return err
		}
		lns = append(lns, ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		l := qp.NewListener(lns[0])
		for ctx.Err() == nil {
			if _, err := perftest.Serve(ctx, l); errors.Is(err, net.ErrClosed) {
				return
			} else if err != nil && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "queue pair: %v\n", err)
			}
		}
	}()
	go echo.ServeTCP(lns[1])
	go echo.ServeDiscard(lns[2])
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
	return nil
}

// demoClient runs one queue-pair test or TCP workload against the
// server at -host over the kernel's TCP and prints its result.
func demoClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	host := fs.String("host", "", "server address")
	test := fs.String("test", "", "queue-pair test")
	tcp := fs.String("tcp", "", "TCP workload instead: pingpong or bulk")
	size := fs.Int("size", 64, "message bytes")
	iters := fs.Int("iters", 10000, "iterations")
	handler := fs.Bool("handler", false, "write_lat from handlers")
	postList := fs.Int("post-list", 1, "requests per PostSend")
	duration := fs.Duration("duration", 2*time.Second, "TCP workload time")
	fs.IntVar(&perftest.SpinLimit, "spin", perftest.SpinLimit, "checks before a waiter blocks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h, err := netip.ParseAddr(*host)
	if err != nil {
		return fmt.Errorf("-host: %w", err)
	}
	ctx := context.Background()
	nd := &net.Dialer{Timeout: 5 * time.Second}
	addr := func(port uint16) string { return netip.AddrPortFrom(h, port).String() }
	var r demoResult
	switch *tcp {
	case "":
		prm := perftest.Params{Test: *test, Size: *size, Iters: *iters, Handler: *handler, PostList: *postList}
		if err := prm.Validate(); err != nil {
			return err
		}
		r.QP, err = perftest.Run(ctx, func(ctx context.Context) (net.Conn, error) { return nd.DialContext(ctx, "tcp", addr(demoQPPort)) }, prm)
	case "pingpong":
		var c net.Conn
		if c, err = nd.DialContext(ctx, "tcp", addr(demoEchoPort)); err != nil {
			return err
		}
		defer c.Close()
		hist, perr := echo.PingPong(ctx, c, echo.PingPongConfig{Size: *size, Duration: *duration})
		if err = perr; err == nil {
			r.RTT = time.Duration(hist.ValueAtQuantile(50))
		}
	case "bulk":
		var c net.Conn
		if c, err = nd.DialContext(ctx, "tcp", addr(demoBulkPort)); err != nil {
			return err
		}
		defer c.Close()
		n, el, berr := echo.Bulk(ctx, c, *duration)
		if err = berr; err == nil {
			r.MiBs = float64(n) / el.Seconds() / (1 << 20)
		}
	default:
		return fmt.Errorf("-tcp %q: want pingpong or bulk", *tcp)
	}
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Printf("RESULT %s\n", b)
	return nil
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func fmtUS(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d)/1e3) }
