// Command ustack-echo is an echo server and client over ustack or the
// kernel's TCP/IP stack, and a demo that compares the two, and the raw
// AF_XDP floor, on a veth pair it builds itself: each server and client a
// process of its own, placed as the benchmark places them (servers on the
// last CPU, clients on the others, as on two hosts).
//
//	ustack-echo demo                                   # needs root
//	ustack-echo server -stack ustack -iface eth1 -addr 198.18.0.10/24 -listen :7000
//	ustack-echo server -stack kernel -listen 198.18.0.2:7000
//	ustack-echo client -connect 198.18.0.10:7000 -mode pingpong -duration 5s
//
// Run "ustack-echo <mode> -h" for every flag of a mode.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ustack-dev/ustack/internal/child"
	"github.com/ustack-dev/ustack/internal/cli"
	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/echohandler"
	"github.com/ustack-dev/ustack/metrics"
	"github.com/ustack-dev/ustack/stack"
)

const usage = `usage: ustack-echo <mode> [flags]

modes:
  demo     build a veth pair in two new namespaces and compare the kernel's
           TCP, ustack and the raw AF_XDP floor, each server and client a
           process of its own on CPUs of its own, as go run ./bench does
           (needs root; under a minute)
  server   run an echo server over ustack or the kernel
  client   run a ping-pong or rate workload against an echo server, or a
           bulk transfer against its discard server

"ustack-echo <mode> -h" lists a mode's flags.
`

func main() {
	maybeRunDemoRole()
	cli.Main("ustack-echo", usage, map[string]cli.Mode{"demo": runDemo, "server": runServer, "client": runClient})
}

// stackFlags are the flags that configure ustack.
type stackFlags struct {
	which, iface, addrs, poll  string
	gateways                   string
	queues                     int
	rxRing, umemMiB            uint
	pin                        bool
	noTxChecksum, noGSO, noGRO bool
	cc, synCookies, xdpSyn     string
}

func (f *stackFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.which, "stack", "ustack", "`stack` to use: ustack or kernel")
	fs.StringVar(&f.iface, "iface", "", "interface ustack attaches to (-stack ustack)")
	fs.StringVar(&f.addrs, "addr", "", "comma-separated `prefixes` ustack owns, e.g. 198.18.0.10/24,2001:2::10/64 (-stack ustack)")
	fs.StringVar(&f.gateways, "gateway", "", "comma-separated default router `addresses`, at most one IPv4 and one IPv6 (-stack ustack)")
	fs.StringVar(&f.poll, "poll", "adaptive", "worker polling `policy`: spin, adaptive or blocking")
	fs.IntVar(&f.queues, "queues", 1, "interface queues (and workers) ustack serves")
	fs.UintVar(&f.rxRing, "rx-ring", 0, "`size` of each queue's RX and fill rings, and its receive frames (0: stack.Config's default)")
	fs.UintVar(&f.umemMiB, "umem", 0, "`MiB` of UMEM (packet memory, all of it pinned) per queue (0: stack.Config's default)")
	fs.BoolVar(&f.pin, "pin", false, "pin each ustack worker to a CPU")
	fs.BoolVar(&f.noTxChecksum, "no-tx-checksum", false, "let netstack compute TX checksums instead of the copy into UMEM (no GSO then)")
	fs.BoolVar(&f.noGSO, "no-gso", false, "turn TCP segmentation offload off: netstack then sends one MSS per packet instead of up to 64 KiB cut into frames in the copy")
	fs.BoolVar(&f.noGRO, "no-gro", false, "no receive coalescing: netstack sees every TCP segment as received")
	fs.StringVar(&f.cc, "cc", "", "TCP congestion `control`: bbr, reno or cubic (default bbr)")
	fs.StringVar(&f.synCookies, "syn-cookies", "", "when listeners answer SYNs with SYN cookies: `auto` or always (default: stack.Config's)")
	fs.StringVar(&f.xdpSyn, "xdp-syn", "", "whether the XDP program answers a flooded listener's SYNs: `auto` (not on veth), on or off (default: stack.Config's)")
}

func (f *stackFlags) config() (stack.Config, error) {
	if f.which != "ustack" && f.which != "kernel" {
		return stack.Config{}, fmt.Errorf("-stack %q: want ustack or kernel", f.which)
	}
	if f.which == "kernel" {
		return stack.Config{}, nil
	}
	if f.iface == "" {
		return stack.Config{}, errors.New("-stack ustack needs -iface")
	}
	if f.addrs == "" {
		return stack.Config{}, errors.New("-stack ustack needs -addr")
	}
	prefixes, err := cli.ParsePrefixes(f.addrs)
	if err != nil {
		return stack.Config{}, err
	}
	poll, err := stack.ParsePollPolicy(f.poll)
	if err != nil {
		return stack.Config{}, err
	}
	if f.queues < 1 {
		return stack.Config{}, fmt.Errorf("-queues %d: want at least 1", f.queues)
	}
	if f.rxRing > 1<<20 {
		return stack.Config{}, fmt.Errorf("-rx-ring %d: too large", f.rxRing)
	}
	if f.umemMiB > 1<<12 {
		return stack.Config{}, fmt.Errorf("-umem %d: too large", f.umemMiB)
	}
	cfg := stack.Config{Interface: f.iface, Addrs: prefixes, Poll: poll, Queues: f.queues, Pin: f.pin, RxRingSize: uint32(f.rxRing), UMEMSize: int(f.umemMiB) << 20,
		Debug: stack.Debug{NoTxChecksum: f.noTxChecksum, NoGSO: f.noGSO, NoGRO: f.noGRO}}
	if f.cc != "" {
		if cfg.CongestionControl, err = stack.ParseCongestionControl(f.cc); err != nil {
			return stack.Config{}, fmt.Errorf("-cc: %w", err)
		}
	}
	if f.synCookies != "" {
		if cfg.SynCookies, err = stack.ParseSynCookieMode(f.synCookies); err != nil {
			return stack.Config{}, fmt.Errorf("-syn-cookies: %w", err)
		}
	}
	if f.xdpSyn != "" {
		if cfg.XDPSyn, err = stack.ParseXDPSynMode(f.xdpSyn); err != nil {
			return stack.Config{}, fmt.Errorf("-xdp-syn: %w", err)
		}
	}
	if f.gateways != "" {
		for _, s := range strings.Split(f.gateways, ",") {
			gw, err := netip.ParseAddr(strings.TrimSpace(s))
			if err != nil {
				return stack.Config{}, fmt.Errorf("-gateway: %w", err)
			}
			if gw.Is4() && !cfg.Gateway4.IsValid() {
				cfg.Gateway4 = gw
			} else if gw.Is6() && !gw.Is4In6() && !cfg.Gateway6.IsValid() {
				cfg.Gateway6 = gw
			} else {
				return stack.Config{}, fmt.Errorf("-gateway %q: want at most one IPv4 and one IPv6 address", f.gateways)
			}
		}
	}
	return cfg, nil
}

func checkRoot() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w (running as uid %d)", stack.ErrPermission, os.Geteuid())
	}
	return nil
}

func runServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	var sf stackFlags
	sf.register(fs)
	listen := fs.String("listen", ":7000", "`address` to listen on (TCP also runs a discard server for -mode bulk on the next port)")
	proto := fs.String("proto", "tcp", "`protocol`: tcp or udp")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the server to `file`")
	trace := fs.Bool("trace", false, "record a latency breakdown of each request (RX ring → netstack → read → write → TX ring → kick) and print it on exit (-stack ustack)")
	pcapFile := fs.String("pcap", "", "write every frame ustack sends and receives to `file` in pcap format (-stack ustack)")
	pcapSnap := fs.Int("pcap-snaplen", 0, "record at most `bytes` of each frame (0: whole frames)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`address`/metrics over the kernel's network, e.g. 127.0.0.1:9100 (-stack ustack)")
	pcapMax := fs.Int64("pcap-max", stack.DefaultCaptureMaxBytes>>20, "stop capturing at `MiB` of capture file")
	handler := fs.Bool("handler", false, "serve with the run-to-completion handler API: the worker echoes each request itself, no goroutine per connection (-stack ustack, -proto tcp)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *handler && (sf.which != "ustack" || *proto != "tcp") {
		return errors.New("-handler needs -stack ustack and -proto tcp")
	}
	if *cpuProfile != "" {
		stopProfile, err := child.StartCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *proto != "tcp" && *proto != "udp" {
		return fmt.Errorf("-proto %q: want tcp or udp", *proto)
	}
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	if *trace && sf.which != "ustack" {
		return errors.New("-trace needs -stack ustack")
	}
	cfg.Trace = *trace
	if *metricsAddr != "" && sf.which != "ustack" {
		return errors.New("-metrics needs -stack ustack")
	}
	if *pcapFile != "" {
		if sf.which != "ustack" {
			return errors.New("-pcap needs -stack ustack")
		}
		if *pcapMax < 1 || *pcapMax > 1<<20 {
			return fmt.Errorf("-pcap-max %d: want 1 to 1048576 MiB", *pcapMax)
		}
		f, err := os.Create(*pcapFile)
		if err != nil {
			return err
		}
		// Closed after the stack, whose Close flushes the capture.
		defer func() {
			if err := f.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "ustack-echo: %v\n", err)
			}
		}()
		cfg.Capture = &stack.Capture{W: f, SnapLen: *pcapSnap, MaxBytes: *pcapMax << 20}
	}
	var ln net.Listener
	var pc net.PacketConn
	var srv *stack.Stack
	switch sf.which {
	case "kernel":
		if *proto == "tcp" {
			ln, err = net.Listen("tcp", *listen)
		} else {
			pc, err = net.ListenPacket("udp", *listen)
		}
		if err != nil {
			return err
		}
	case "ustack":
		if err := checkRoot(); err != nil {
			return err
		}
		if os.Getenv("GOMAXPROCS") == "" && cfg.Poll != stack.Blocking && runtime.GOMAXPROCS(0) > cfg.Queues {
			// One P per spinning worker: the handlers then run on the
			// workers' threads instead of waking idle ones (README,
			// Known issues). This process is ours to tune.
			runtime.GOMAXPROCS(cfg.Queues)
			fmt.Printf("GOMAXPROCS=%d (one per worker; set GOMAXPROCS to override)\n", cfg.Queues)
		}
		s, err := stack.New(cfg)
		if err != nil {
			return err
		}
		defer s.Close()
		q := max(cfg.Queues, 1)
		fmt.Printf("UMEM %d bytes (%.1f MiB) per queue, %d pinned for %d queue(s)\n", s.UMEMSize(), float64(s.UMEMSize())/(1<<20), q*s.UMEMSize(), q)
		defer printStats(s)
		srv = s
		if *metricsAddr != "" {
			mln, err := net.Listen("tcp", *metricsAddr)
			if err != nil {
				return fmt.Errorf("-metrics: %w", err)
			}
			mux := http.NewServeMux()
			mux.Handle("/metrics", metrics.Handler(s))
			hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
			go hs.Serve(mln)
			defer hs.Close()
			fmt.Printf("metrics on http://%v/metrics\n", mln.Addr())
		}
		if *handler {
			return serveHandlers(ctx, s, *listen)
		}
		if *proto == "tcp" {
			ln, err = s.Listen("tcp", *listen)
		} else {
			pc, err = s.ListenPacket("udp", *listen)
		}
		if err != nil {
			return err
		}
	}
	errc := make(chan error, 2)
	if ln != nil {
		ap, err := netip.ParseAddrPort(ln.Addr().String())
		if err != nil {
			// A wildcard listener: the discard server is wildcard too.
			_, p, _ := net.SplitHostPort(ln.Addr().String())
			ap, err = netip.ParseAddrPort("0.0.0.0:" + p)
			if err != nil {
				return err
			}
		}
		daddr := netip.AddrPortFrom(ap.Addr(), ap.Port()+1).String()
		if ap.Addr().IsUnspecified() {
			daddr = fmt.Sprintf(":%d", ap.Port()+1)
		}
		var dln net.Listener
		if srv != nil {
			dln, err = srv.Listen("tcp", daddr)
		} else {
			dln, err = net.Listen("tcp", daddr)
		}
		if err != nil {
			return fmt.Errorf("discard server: %w", err)
		}
		defer dln.Close()
		fmt.Printf("echo server (%s, tcp) on %v, discard server on %v\n", sf.which, ln.Addr(), dln.Addr())
		go func() { errc <- echo.ServeTCP(ln) }()
		go func() { errc <- echo.ServeDiscard(dln) }()
		defer ln.Close()
	} else {
		fmt.Printf("echo server (%s, udp) on %v\n", sf.which, pc.LocalAddr())
		go func() { errc <- echo.ServeUDP(pc) }()
		defer pc.Close()
	}
	select {
	case <-ctx.Done():
		fmt.Println("shutting down")
		return nil
	case err := <-errc:
		return err
	}
}

func runClient(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	var sf stackFlags
	sf.register(fs)
	fs.Lookup("stack").DefValue = "kernel"
	sf.which = "kernel"
	connect := fs.String("connect", "", "echo server `address` (ip:port)")
	mode := fs.String("mode", "pingpong", "`workload`: pingpong (RTT), rate (requests/s) or bulk (one-way throughput to the discard server on the next port)")
	proto := fs.String("proto", "tcp", "`protocol` for pingpong: tcp or udp")
	size := fs.Int("size", 64, "message `bytes`")
	conns := fs.Int("conns", 32, "connections (rate)")
	pipeline := fs.Int("pipeline", 1, "requests in flight per connection (rate)")
	duration := fs.Duration("duration", 5*time.Second, "measured `time`")
	count := fs.Int("count", 0, "stop a ping-pong after this many round trips (0: use -duration)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *connect == "" {
		return errors.New("-connect is required")
	}
	if *size < 1 || *size > 1<<20 {
		return fmt.Errorf("-size %d: want 1 to 1048576", *size)
	}
	if *duration <= 0 || *duration > time.Hour {
		return fmt.Errorf("-duration %v: want (0, 1h]", *duration)
	}
	if *conns < 1 || *conns > 100000 || *pipeline < 1 || *count < 0 {
		return errors.New("-conns, -pipeline must be positive and -count not negative")
	}
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	var dial echo.Dialer = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	if sf.which == "ustack" {
		if err := checkRoot(); err != nil {
			return err
		}
		s, err := stack.New(cfg)
		if err != nil {
			return err
		}
		defer s.Close()
		q := max(cfg.Queues, 1)
		fmt.Printf("UMEM %d bytes (%.1f MiB) per queue, %d pinned for %d queue(s)\n", s.UMEMSize(), float64(s.UMEMSize())/(1<<20), q*s.UMEMSize(), q)
		defer printStats(s)
		dial = s.DialContext
	}
	switch *mode {
	case "pingpong":
		c, err := dial(ctx, *proto, *connect)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Printf("ping-pong %d bytes over %s to %s for %v...\n", *size, sf.which, *connect, *duration)
		h, err := echo.PingPong(ctx, c, echo.PingPongConfig{Size: *size, Count: *count, Duration: *duration})
		if err != nil && h.TotalCount() == 0 {
			return err
		}
		fmt.Printf("%d round trips  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", h.TotalCount(),
			us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(90)), us(h.ValueAtQuantile(99)), us(h.ValueAtQuantile(99.9)), us(h.Max()))
		return err
	case "rate":
		fmt.Printf("rate: %d connections, %d-byte requests, pipeline %d, over %s to %s for %v...\n", *conns, *size, *pipeline, sf.which, *connect, *duration)
		n, el, err := echo.Rate(ctx, dial, echo.RateConfig{Network: "tcp", Address: *connect, Conns: *conns, Size: *size, Pipeline: *pipeline, Duration: *duration})
		if err != nil {
			return err
		}
		fmt.Printf("%d requests in %v: %.0f requests/s\n", n, el.Round(time.Millisecond), float64(n)/el.Seconds())
	case "bulk":
		ap, err := netip.ParseAddrPort(*connect)
		if err != nil {
			return fmt.Errorf("-connect: %w", err)
		}
		target := netip.AddrPortFrom(ap.Addr(), ap.Port()+1).String()
		c, err := dial(ctx, "tcp", target)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Printf("bulk over %s to %s for %v...\n", sf.which, target, *duration)
		n, el, err := echo.Bulk(ctx, c, *duration)
		if err != nil {
			return err
		}
		fmt.Printf("%d bytes in %v: %.2f Gbit/s\n", n, el.Round(time.Millisecond), float64(n)*8/el.Seconds()/1e9)
	default:
		return fmt.Errorf("-mode %q: want pingpong, rate or bulk", *mode)
	}
	return nil
}

func us(ns int64) string { return fmt.Sprintf("%.1fµs", float64(ns)/1e3) }

func printStats(s *stack.Stack) {
	st := s.Stats()
	fmt.Print(st.Summary())
	if st.Trace != nil {
		printTrace(os.Stdout, st.Trace)
	}
}

// printTrace prints the latency breakdown as a table.
func printTrace(w io.Writer, t *stack.TraceStats) {
	fmt.Fprintf(w, "latency breakdown (from the request's frame leaving the RX ring):\n")
	fmt.Fprintf(w, "  %-13s %9s %9s %9s %9s\n", "stage", "sampled", "p50", "p90", "p99")
	for _, s := range t.Stages {
		fmt.Fprintf(w, "  %-13v %9d %9s %9s %9s\n", s.Stage, s.Count, us(int64(s.P50)), us(int64(s.P90)), us(int64(s.P99)))
	}
}

// serveHandlers runs the echo and discard servers on the handler API until
// ctx ends.
func serveHandlers(ctx context.Context, s *stack.Stack, listen string) error {
	ln, err := s.ListenHandler("tcp", listen, echohandler.Echo{})
	if err != nil {
		return err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(listen)
	p, _ := strconv.Atoi(port)
	dln, err := s.ListenHandler("tcp", net.JoinHostPort(host, strconv.Itoa(p+1)), echohandler.Discard{})
	if err != nil {
		return fmt.Errorf("discard server: %w", err)
	}
	defer dln.Close()
	fmt.Printf("echo server (ustack, tcp, handler API) on %v, discard server on %v\n", ln.Addr(), dln.Addr())
	<-ctx.Done()
	fmt.Println("shutting down")
	return nil
}
