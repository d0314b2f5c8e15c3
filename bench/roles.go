//go:build linux

package main

// The benchmark runs each server and each client as a child process of its
// own, started inside the right namespace, so that CPU time can be charged
// to each and so that no contender shares a Go runtime with its client.
// A child learns its role from the USTACK_BENCH_ROLE environment variable
// (so the same binary works under go run and go test) and its settings
// from its arguments.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/internal/child"
	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/echohandler"
	"github.com/ustack-dev/ustack/internal/hist"
	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
	"golang.org/x/sys/unix"
)

const roleEnv = "USTACK_BENCH_ROLE"

// Addresses beyond vethtest's: what a ustack client owns on the Kernel
// host's link.
var clientUstackIPv4 = netip.MustParseAddr("198.18.0.20")

// maybeRunRole runs the child role named in the environment, if any, and
// exits.
func maybeRunRole() {
	role := os.Getenv(roleEnv)
	if role == "" {
		return
	}
	var err error
	switch role {
	case "serve":
		err = serveMain(os.Args[1:])
	case "client":
		err = clientMain(os.Args[1:])
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveMain runs one contender's echo server until its standard input
// closes (the parent going away closes it too). It prints "READY" once it
// accepts connections, followed by the XDP attach mode if it attached the
// program.
func serveMain(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	contender := fs.String("contender", "", "server kind")
	iface := fs.String("iface", "", "interface")
	poll := fs.String("poll", "spin", "ustack polling policy")
	port := fs.Int("port", 7000, "port")
	upstream := fs.Bool("upstream", false, "ustack with upstream netstack's hand-offs and immediate ACKs")
	offload := fs.String("offload", "", "ustack offload setting: \"\" (the defaults), no-gro, no-gso, no-tx-checksum, or netstack-fast-path (Config.Debug.NetstackFastPath)")
	delay := fs.Duration("delay", 0, "the floor's processing time per batch (busy-waited)")
	handler := fs.Bool("handler", false, "ustack: echo and discard servers on the handler API")
	fresh := fs.Bool("fresh", false, "floor: TCP echoes copied into fresh frames (reflector.Floor.Fresh)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if dir := os.Getenv("USTACK_BENCH_CPUPROFILE"); dir != "" {
		// A lab aid: each server child profiles its whole life.
		stopProfile, err := child.StartCPUProfile(filepath.Join(dir, fmt.Sprintf("%s-%d.prof", *contender, os.Getpid())))
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	stop, mode, err := startServer(*contender, *iface, *poll, uint16(*port), *upstream, *handler, *offload, *delay, *fresh)
	if err != nil {
		return err
	}
	fmt.Println(strings.TrimSpace("READY " + mode))
	// Commands from the parent, one a line, until it closes stdin:
	// "reset" clears the ustack server's latency breakdown and the
	// floor's sink and TCP bulk counters, "trace" prints the breakdown as a TRACE
	// line of JSON ("TRACE null" for other servers), "sink" the floor's
	// sink counters as a SINK line, "losses" the losses the floor's TCP
	// sink and source saw as a LOSSES line, "busy" the ustack server's workers'
	// busy time (stack.QueueStats.WorkerBusy) in seconds, their number,
	// their kicks' time (KickTime) and the time their Ps ran other
	// goroutines (YieldTime) as a BUSY line ("BUSY -1 0 0 0" for other
	// servers).
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "reset":
			if servedStack != nil {
				servedStack.ResetTrace()
			}
			if servedFloor != nil {
				servedFloor.ResetSink()
				servedFloor.TCPBulk.Reset()
			}
		case "sink":
			var r reflector.Count
			if servedFloor != nil {
				r = servedFloor.Sink().Count()
			}
			b, _ := json.Marshal(r)
			fmt.Printf("SINK %s\n", b)
		case "losses":
			var n int64
			if servedFloor != nil {
				n = servedFloor.TCPBulk.Losses()
			}
			fmt.Printf("LOSSES %d\n", n)
		case "busy":
			busy, workers, kicks, yield := -1.0, 0, 0.0, 0.0
			if servedStack != nil {
				st := servedStack.Stats()
				d, k := st.WorkerTime()
				busy, workers, kicks, yield = d.Seconds(), len(st.Queues), k.Seconds(), st.YieldTime().Seconds()
			}
			fmt.Printf("BUSY %g %d %g %g\n", busy, workers, kicks, yield)
		case "trace":
			var t *stack.TraceStats
			if servedStack != nil {
				t = servedStack.Stats().Trace
			}
			b, _ := json.Marshal(t)
			fmt.Printf("TRACE %s\n", b)
		}
	}
	// A lab aid: the ustack server's counters as it ends, to a file
	// per server child.
	if dir := os.Getenv("USTACK_BENCH_STATS"); dir != "" && servedStack != nil {
		name := filepath.Join(dir, fmt.Sprintf("%s-%d.txt", *contender, os.Getpid()))
		if err := os.WriteFile(name, []byte(servedStack.Stats().Summary()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "bench serve: USTACK_BENCH_STATS: %v\n", err)
		}
	}
	// Clean up, but not forever: gVisor's own endpoint can hang in its
	// teardown. Exiting releases the sockets, UMEM and XDP link anyway.
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		fmt.Fprintf(os.Stderr, "bench serve: %s cleanup still running after 3s; exiting\n", *contender)
	}
	return nil
}

// clientResult is what a client child reports, as one JSON line.
type clientResult struct {
	Count    int64           `json:"count"`
	Seconds  float64         `json:"seconds"`
	Bytes    int64           `json:"bytes,omitempty"`
	RTT      *rttQuantiles   `json:"rtt,omitempty"`
	CDF      [][2]float64    `json:"cdf,omitempty"` // (µs, fraction) pairs
	Error    string          `json:"error,omitempty"`
	Extra    json.RawMessage `json:"extra,omitempty"`
	Workload string          `json:"workload"`
	// XDPMode is the attach mode of a ustack client's XDP program.
	XDPMode string `json:"xdp_mode,omitempty"`
	// Breakdown is a ustack client's latency breakdown over the measured
	// ping-pong (Config.Trace).
	Breakdown []stageTime `json:"breakdown,omitempty"`
}

type rttQuantiles struct {
	P50, P90, P99, P999, Max float64 // microseconds
}

// clientMain runs one workload against a server and prints START and END
// around the measured part (the parent samples the server's CPU time
// then) and finally the result as JSON.
func clientMain(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	dialKind := fs.String("dial", "kernel", "kernel, busypoll, ustack, ustack-handler (ping-pong and rate from handlers on a ustack client), ustack-handler-netstack (the same on netstack's fast path), floor (UDP) or floor-tcp (TCP-shaped, stateless)")
	iface := fs.String("iface", "", "interface (ustack client)")
	addr := fs.String("addr", "", "echo server address")
	bulkAddr := fs.String("bulk-addr", "", "discard server address (bulk)")
	sourceAddr := fs.String("source-addr", "", "source server address (bulk-s2c)")
	qpAddr := fs.String("qp-addr", "", "queue-pair server address (qp)")
	proto := fs.String("proto", "tcp", "tcp or udp")
	workload := fs.String("workload", "pingpong", "pingpong, qp (queue-pair write_lat), qp-handler (write_lat from handlers), qp-bw (queue-pair write_bw), rate, bulk (client to server) or bulk-s2c (server to client)")
	size := fs.Int("size", 64, "message bytes")
	conns := fs.Int("conns", 32, "rate connections")
	held := fs.Int("held", 10000, "connections the conns workload holds")
	pipeline := fs.Int("pipeline", 1, "rate pipeline depth")
	duration := fs.Duration("duration", 3*time.Second, "measured time")
	warmup := fs.Int("warmup", 1000, "ping-pong warm-up round trips")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	dial, closeDial, mode, err := clientDialer(*dialKind, *iface)
	if err != nil {
		return err
	}
	defer closeDial()
	res := clientResult{Workload: *workload, XDPMode: mode}
	out := bufio.NewWriter(os.Stdout)
	mark := func(s string) { fmt.Fprintln(out, s); out.Flush() }
	switch *workload {
	case "pingpong":
		c, err := dial(ctx, *proto, *addr)
		if err != nil {
			return err
		}
		defer c.Close()
		pingPong := func(cfg echo.PingPongConfig) (*hist.Histogram, error) { return echo.PingPong(ctx, c, cfg) }
		if handlerClient(*dialKind) {
			// The handler client dials a connection of its own; the one
			// above only proves the server is there.
			pingPong = func(cfg echo.PingPongConfig) (*hist.Histogram, error) {
				return echohandler.PingPong(ctx, clientStack, *proto, *addr, cfg)
			}
		}
		// Warm-up outside the marks, then the measured run.
		if _, err := pingPong(echo.PingPongConfig{Size: *size, Warmup: -1, Count: *warmup}); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		mark("START")
		if clientStack != nil {
			clientStack.ResetTrace()
		}
		t0 := time.Now()
		h, err := pingPong(echo.PingPongConfig{Size: *size, Warmup: -1, Duration: *duration})
		res.Seconds = time.Since(t0).Seconds()
		mark("END")
		if err != nil {
			return err
		}
		if clientStack != nil {
			res.Breakdown = traceStages(clientStack.Stats().Trace)
		}
		res.Count = h.TotalCount()
		res.RTT, res.CDF = rttOf(h), histCDF(h)
	case "qp", "qp-handler":
		// perftest's write_lat over a queue pair on the same stacks as the
		// TCP ping-pong: iterations for about the duration at a 50 µs
		// round trip. The marks take in the connection setup and
		// perftest's 100 warm-up iterations (a small part of the CPU
		// time); the latencies are the measured iterations'. The round
		// trip is twice perftest's one-way figure. qp-handler answers each
		// Write from the queue pairs' OnInput handlers, where it lands,
		// on both ends.
		iters := min(max(int(*duration/(50*time.Microsecond)), 1000), 1_000_000)
		qdial := func(ctx context.Context) (net.Conn, error) { return dial(ctx, "tcp", *qpAddr) }
		mark("START")
		t0 := time.Now()
		r, err := perftest.Run(ctx, qdial, perftest.Params{Test: "write_lat", Size: *size, Iters: iters, Handler: *workload == "qp-handler"})
		res.Seconds = time.Since(t0).Seconds()
		mark("END")
		if err != nil {
			return err
		}
		h := echo.NewHistogram()
		for _, d := range r.Lat {
			h.RecordValue(int64(2 * d))
		}
		res.Count = h.TotalCount()
		res.RTT, res.CDF = rttOf(h), histCDF(h)
	case "qp-bw":
		// perftest's write_bw: Writes of size bytes, as many as take
		// about the duration at 8 Gbit/s (at least 1,000), to the
		// queue-pair server over the same stacks as the bulk workload.
		// (At 4 Gbit/s the measured window of a ustack contender was
		// 0.6-0.7 of bulk's, and its ratio to bulk noisier.)
		iters := max(int(duration.Seconds()*8e9/8/float64(*size)), 1000)
		qdial := func(ctx context.Context) (net.Conn, error) { return dial(ctx, "tcp", *qpAddr) }
		mark("START")
		r, err := perftest.Run(ctx, qdial, perftest.Params{Test: "write_bw", Size: *size, Iters: iters, PostList: qpBWPostList})
		mark("END")
		if err != nil {
			return err
		}
		res.Count, res.Bytes, res.Seconds = int64(iters), r.Bytes, r.Elapsed.Seconds()
	case "rate":
		// echo.Rate marks nothing itself: its warm-up is half a second,
		// so START comes after that.
		go func() {
			time.Sleep(500 * time.Millisecond)
			mark("START")
		}()
		rc := echo.RateConfig{Network: *proto, Address: *addr, Conns: *conns, Size: *size, Pipeline: *pipeline, Duration: *duration, Warmup: 500 * time.Millisecond}
		rate := func() (int64, time.Duration, error) { return echo.Rate(ctx, dial, rc) }
		switch *dialKind {
		case "ustack-handler", "ustack-handler-netstack":
			rate = func() (int64, time.Duration, error) { return echohandler.Rate(ctx, clientStack, rc) }
		case "floor":
			// One AF_XDP socket with a flow per connection, each
			// request turned around in its reply's frame: the
			// ceiling of a rate over raw AF_XDP at both ends.
			rate = func() (int64, time.Duration, error) {
				remote, err := netip.ParseAddrPort(*addr)
				if err != nil {
					return 0, 0, err
				}
				return reflector.Rate(ctx, reflector.RateConfig{Interface: *iface, Local: clientUstackIPv4, Remote: remote,
					Flows: *conns, Size: *size, Warmup: rc.Warmup, Duration: rc.Duration})
			}
		}
		n, el, err := rate()
		mark("END")
		if err != nil {
			return err
		}
		res.Count, res.Seconds = n, el.Seconds()
	case "bulk":
		if *proto == "udp" {
			// The floor counts what it receives; the parent asks it.
			// The pause lets the parent's reset reach the floor first.
			mark("START")
			time.Sleep(50 * time.Millisecond)
			blast := func() (int64, error) {
				return reflector.Blast(ctx, reflector.Dialer(dial), *bulkAddr, *size, *duration)
			}
			if *dialKind == "floor" {
				blast = func() (int64, error) {
					remote, err := netip.ParseAddrPort(*bulkAddr)
					if err != nil {
						return 0, err
					}
					return reflector.BlastXDP(ctx, *iface, netip.AddrPortFrom(clientUstackIPv4, floorClientPort), remote, *size, *duration)
				}
			}
			n, err := blast()
			mark("END")
			if err != nil {
				return err
			}
			res.Count = n
			break
		}
		c, err := dial(ctx, "tcp", *bulkAddr)
		if err != nil {
			return err
		}
		defer c.Close()
		mark("START")
		n, el, err := echo.Bulk(ctx, c, *duration)
		mark("END")
		if err != nil {
			return err
		}
		res.Bytes, res.Seconds = n, el.Seconds()
	case "conns":
		r, err := heldConns(ctx, dial, *addr, *held, mark, bufio.NewReader(os.Stdin))
		if err != nil {
			return err
		}
		res.Count, res.Seconds = r.Count, r.Seconds
	case "bulk-s2c":
		if *proto == "udp" {
			count := func() (reflector.Count, error) {
				return reflector.CountStream(ctx, reflector.Dialer(dial), *sourceAddr, *duration)
			}
			if *dialKind == "floor" {
				count = func() (reflector.Count, error) {
					remote, err := netip.ParseAddrPort(*sourceAddr)
					if err != nil {
						return reflector.Count{}, err
					}
					return reflector.CountStreamXDP(ctx, *iface, netip.AddrPortFrom(clientUstackIPv4, floorClientPort), remote, *duration)
				}
			}
			mark("START")
			r, err := count()
			mark("END")
			if err != nil {
				return err
			}
			res.Count, res.Bytes, res.Seconds = r.Frames, r.Bytes, r.Seconds
			break
		}
		c, err := dial(ctx, "tcp", *sourceAddr)
		if err != nil {
			return err
		}
		defer c.Close()
		mark("START")
		n, el, err := echo.Download(ctx, c, *duration)
		mark("END")
		if err != nil {
			return err
		}
		res.Bytes, res.Seconds = n, el.Seconds()
	default:
		return fmt.Errorf("unknown workload %q", *workload)
	}
	b, _ := json.Marshal(res)
	fmt.Fprintf(out, "RESULT %s\n", b)
	return out.Flush()
}

// rttOf returns the histogram's quantiles in µs.
func rttOf(h *hist.Histogram) *rttQuantiles {
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1e3 }
	return &rttQuantiles{P50: q(50), P90: q(90), P99: q(99), P999: q(99.9), Max: float64(h.Max()) / 1e3}
}

// histCDF returns the histogram's whole distribution as a CDF: for every
// non-empty bucket, its upper bound in µs and the fraction of values up to
// it, so a plotted line keeps the shape between percentiles.
func histCDF(h *hist.Histogram) [][2]float64 {
	total := h.TotalCount()
	if total == 0 {
		return nil
	}
	var cdf [][2]float64
	var seen int64
	h.Each(func(_, to, count int64) {
		seen += count
		cdf = append(cdf, [2]float64{float64(to) / 1e3, float64(seen) / float64(total)})
	})
	return cdf
}

// clientDialer returns how the client connects: the kernel's sockets, the
// kernel's with busy polling and spinning reads, or a ustack instance on
// the Kernel host's veth end (with the mode its XDP program attached in).
func clientDialer(kind, iface string) (dial echo.Dialer, closeDial func(), xdpMode string, err error) {
	nd := &net.Dialer{Timeout: 5 * time.Second}
	switch kind {
	case "kernel":
		return nd.DialContext, func() {}, "", nil
	case "busypoll":
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return newBusyConn(c)
		}, func() {}, "", nil
	case "ustack", "ustack-handler", "ustack-handler-netstack":
		cfg := stack.Config{
			Interface: iface,
			Addrs:     []netip.Prefix{netip.PrefixFrom(clientUstackIPv4, vethtest.PrefixLen4)},
			Poll:      stack.Spin,
			// The client's breakdown, with the server's, accounts for
			// a ustack-ustack round trip (as the server's, sampled).
			Trace: true,
		}
		cfg.Debug.NetstackFastPath = kind == "ustack-handler-netstack"
		s, err := stack.New(cfg)
		if err != nil {
			return nil, nil, "", err
		}
		clientStack = s
		return s.DialContext, func() { s.Close() }, s.Stats().AttachMode.String(), nil
	case "floor":
		// The floor's packet code at the client's end: one UDP flow on
		// a raw AF_XDP socket (floor-floor).
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil || network != "udp" {
				return nil, fmt.Errorf("floor client: %s %q: want a udp ip:port", network, addr)
			}
			return reflector.Dial(iface, netip.AddrPortFrom(clientUstackIPv4, floorClientPort), ap)
		}, func() {}, bpf.AttachNative.String(), nil
	case "floor-tcp":
		// TCP-shaped packet code at the client's end: one flow whose
		// segments are cut into fresh frames with the checksum in the
		// copy (floor-floor-tcp).
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil || network != "tcp" {
				return nil, fmt.Errorf("floor-tcp client: %s %q: want a tcp ip:port", network, addr)
			}
			return reflector.DialTCP(iface, netip.AddrPortFrom(clientUstackIPv4, floorClientPort), ap)
		}, func() {}, bpf.AttachNative.String(), nil
	}
	return nil, nil, "", fmt.Errorf("unknown dialer %q", kind)
}

// handlerClient reports whether a -dial kind sends from handlers on a
// ustack client.
func handlerClient(kind string) bool {
	return kind == "ustack-handler" || kind == "ustack-handler-netstack"
}

// clientStack is a ustack client's stack (-dial ustack or ustack-handler).
var clientStack *stack.Stack

// floorClientPort is the floor-floor client's UDP port.
const floorClientPort = 40000

// busyConn reads by spinning on a non-blocking socket with SO_BUSY_POLL
// set, the strongest latency setting the kernel offers per socket.
type busyConn struct {
	net.Conn
	fd int
	f  *os.File
}

// busyPollMicros is the SO_BUSY_POLL budget set on each socket.
const busyPollMicros = 50

func newBusyConn(c net.Conn) (net.Conn, error) {
	fc, ok := c.(interface{ File() (*os.File, error) })
	if !ok {
		c.Close()
		return nil, errors.New("busy poll needs a socket")
	}
	f, err := fc.File() // a dup, in blocking mode
	c.Close()
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		f.Close()
		return nil, err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL, busyPollMicros); err != nil {
		f.Close()
		return nil, fmt.Errorf("SO_BUSY_POLL: %w", err)
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	nc, err := net.FileConn(f) // for addresses only
	if err != nil {
		f.Close()
		return nil, err
	}
	return &busyConn{Conn: nc, fd: fd, f: f}, nil
}

func (b *busyConn) Read(p []byte) (int, error) {
	for spins := 0; ; spins++ {
		n, err := unix.Read(b.fd, p)
		if n > 0 {
			return n, nil
		}
		if n == 0 && err == nil {
			return 0, io.EOF
		}
		if err != unix.EAGAIN && err != unix.EINTR {
			return 0, err
		}
		if spins > 50_000_000 {
			return 0, os.ErrDeadlineExceeded
		}

	}
}

func (b *busyConn) Write(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		n, err := unix.Write(b.fd, p[w:])
		if n > 0 {
			w += n
		}
		if err != nil && err != unix.EAGAIN && err != unix.EINTR {
			return w, err
		}
	}
	return w, nil
}

func (b *busyConn) CloseWrite() error { return unix.Shutdown(b.fd, unix.SHUT_WR) }

func (b *busyConn) Close() error {
	b.Conn.Close()
	return b.f.Close()
}

func (b *busyConn) SetDeadline(time.Time) error      { return nil }
func (b *busyConn) SetReadDeadline(time.Time) error  { return nil }
func (b *busyConn) SetWriteDeadline(time.Time) error { return nil }

// serveBusyPoll echoes each accepted connection (or, with discard, reads
// it to the end and writes back the byte count, as echo.ServeDiscard) with
// a spinning busy-poll read loop.
func serveBusyPoll(ln net.Listener, discard bool) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		bc, err := newBusyConn(c)
		if err != nil {
			return err
		}
		go func() {
			defer bc.Close()
			buf := make([]byte, 256<<10)
			var total uint64
			for {
				n, err := bc.Read(buf)
				if err != nil {
					if discard && err == io.EOF {
						var b [8]byte
						binary.BigEndian.PutUint64(b[:], total)
						bc.Write(b[:])
					}
					return
				}
				total += uint64(n)
				if discard {
					continue
				}
				if _, err := bc.Write(buf[:n]); err != nil {
					return
				}
			}
		}()
	}
}
