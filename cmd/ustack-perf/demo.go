package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/qp"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

// contender is one server stack in the demo, with what it measured.
type contender struct {
	name     string
	lat      map[string][]time.Duration
	bw       perftest.Result
	tcpRTT   time.Duration // TCP ping-pong p50, same size
	tcpBulk  float64       // MiB/s
	qpLn     net.Listener
	echoLn   net.Listener
	bulkLn   net.Listener
	qpServer chan error
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
	fs.IntVar(&perftest.SpinLimit, "spin", perftest.SpinLimit, "`checks` of memory or a CQ before a waiter blocks")
	if err := fs.Parse(args); err != nil {
		return err
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
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w (running as uid %d)", stack.ErrPermission, os.Geteuid())
	}
	pair, err := vethtest.New(vethtest.Options{})
	if err != nil {
		return err
	}
	defer pair.Close()
	fmt.Printf("topology: namespace %s (kernel peer %v) ⟷ veth ⟷ namespace %s (kernel %v, ustack %v)\n",
		pair.Kernel.Namespace, pair.Kernel.IPv4, pair.Ustack.Namespace, pair.Ustack.IPv4, vethtest.UstackIPv4)
	fmt.Printf("clients: kernel TCP in %s; servers: the kernel's TCP, then ustack (%v polling); GOMAXPROCS %d\n\n",
		pair.Kernel.Namespace, poll, runtime.GOMAXPROCS(0))
	dial := func(addr string) func(context.Context) (net.Conn, error) {
		return func(ctx context.Context) (net.Conn, error) {
			var c net.Conn
			err := pair.Kernel.Do(func() (err error) {
				c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
				return err
			})
			return c, err
		}
	}
	// write_lat/handler is write_lat answered from the queue pairs'
	// OnInput handlers, where each Write lands (perftest.Params.Handler).
	latTests := []string{"write_lat", "write_lat/handler", "send_lat", "read_lat", "atomic_lat"}
	measure := func(c *contender) error {
		c.lat = map[string][]time.Duration{}
		l := qp.NewListener(c.qpLn)
		run := func(prm perftest.Params) (perftest.Result, error) {
			errc := make(chan error, 1)
			go func() { _, err := perftest.Serve(ctx, l); errc <- err }()
			r, err := perftest.Run(ctx, dial(c.qpLn.Addr().String()), prm)
			if serr := <-errc; err == nil && serr != nil {
				err = fmt.Errorf("server: %w", serr)
			}
			return r, err
		}
		fmt.Printf("%-7s", c.name)
		for _, test := range latTests {
			name, mode, _ := strings.Cut(test, "/")
			prm := perftest.Params{Test: name, Size: *size, Iters: *iters, Handler: mode == "handler"}
			if test == "atomic_lat" {
				prm.Size = 8
			}
			r, err := run(prm)
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.name, test, err)
			}
			c.lat[test] = r.Lat
			fmt.Printf(" %s %s;", test, fmtUS(median(r.Lat)))
		}
		r, err := run(perftest.Params{Test: "write_bw", Size: *bwSize, Iters: *bwIters, PostList: *postList})
		if err != nil {
			return fmt.Errorf("%s write_bw: %w", c.name, err)
		}
		c.bw = r
		fmt.Printf(" write_bw %.0f MiB/s;", float64(r.Bytes)/r.Elapsed.Seconds()/(1<<20))
		conn, err := dial(c.echoLn.Addr().String())(ctx)
		if err != nil {
			return err
		}
		h, err := echo.PingPong(ctx, conn, echo.PingPongConfig{Size: *size, Duration: *duration})
		conn.Close()
		if err != nil {
			return fmt.Errorf("%s TCP ping-pong: %w", c.name, err)
		}
		c.tcpRTT = time.Duration(h.ValueAtQuantile(50))
		fmt.Printf(" TCP ping-pong %s;", fmtUS(c.tcpRTT))
		conn, err = dial(c.bulkLn.Addr().String())(ctx)
		if err != nil {
			return err
		}
		n, el, err := echo.Bulk(ctx, conn, *duration)
		conn.Close()
		if err != nil {
			return fmt.Errorf("%s TCP bulk: %w", c.name, err)
		}
		c.tcpBulk = float64(n) / el.Seconds() / (1 << 20)
		fmt.Printf(" TCP bulk %.0f MiB/s\n", c.tcpBulk)
		return nil
	}
	listen3 := func(listen func(port uint16) (net.Listener, error), c *contender) error {
		var err error
		if c.qpLn, err = listen(18515); err != nil {
			return err
		}
		if c.echoLn, err = listen(7000); err != nil {
			return err
		}
		c.bulkLn, err = listen(7001)
		return err
	}
	closeAll := func(c *contender) {
		for _, l := range []net.Listener{c.qpLn, c.echoLn, c.bulkLn} {
			if l != nil {
				l.Close()
			}
		}
	}

	// The kernel first, before the XDP program is attached.
	kernel := &contender{name: "kernel"}
	err = pair.Ustack.Do(func() error {
		return listen3(func(port uint16) (net.Listener, error) {
			return net.Listen("tcp", netip.AddrPortFrom(pair.Ustack.IPv4, port).String())
		}, kernel)
	})
	if err == nil {
		go echo.ServeTCP(kernel.echoLn)
		go echo.ServeDiscard(kernel.bulkLn)
		err = measure(kernel)
	}
	closeAll(kernel)
	if err != nil {
		return err
	}

	var s *stack.Stack
	if err := pair.Ustack.Do(func() (err error) {
		s, err = stack.New(stack.Config{Interface: pair.Ustack.Link, Poll: poll,
			Addrs: []netip.Prefix{netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4)}})
		return err
	}); err != nil {
		return err
	}
	defer s.Close()
	ustack := &contender{name: "ustack"}
	err = listen3(func(port uint16) (net.Listener, error) {
		return s.Listen("tcp", netip.AddrPortFrom(vethtest.UstackIPv4, port).String())
	}, ustack)
	if err == nil {
		go echo.ServeTCP(ustack.echoLn)
		go echo.ServeDiscard(ustack.bulkLn)
		err = measure(ustack)
	}
	closeAll(ustack)
	if err != nil {
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
