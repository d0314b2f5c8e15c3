package main

// The demo builds a veth pair between two new namespaces and runs each
// server (the kernel's TCP, ustack, the raw AF_XDP floor) and each
// workload's client as a process of its own, placed as the benchmark
// places them: servers on the last CPU, clients on the others, as on two
// hosts (-shared lets the scheduler place them). The processes are this
// binary again, with their role in the environment.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ustack-dev/ustack/internal/child"
	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

// demoRoleEnv names a demo child's role (child.RoleServer or
// child.RoleClient).
const demoRoleEnv = "USTACK_ECHO_DEMO_ROLE"

const demoPort = 7000

// demoServers are the servers the demo compares, in order: the kernel
// first, before any XDP program is attached to the link. floor-tcp is the
// floor server again, measured with the TCP ping-pong it echoes without
// connection state and the TCP bulk its sink takes in order, acknowledging
// it once a batch: the least a TCP server can do for the kernel's client,
// whose TCP costs it more than its UDP.
var demoServers = []string{"kernel", "ustack", "floor", "floor-tcp"}

// demoFigures is what the demo measured of one server.
type demoFigures struct {
	Server string
	// RTT quantiles of the ping-pong, µs.
	P50, P99, P999 float64
	ReqPerSec      float64 // 0 for the floors
	BulkGbps       float64 // client to server
	BulkFrames     float64 // frames/s, the floor's bulk only
}

// demoReport is a whole demo run.
type demoReport struct {
	Placement child.Placement
	CPUModel  string
	Figures   map[string]*demoFigures
}

func runDemo(ctx context.Context, args []string) error {
	_, err := demo(ctx, os.Stdout, args)
	return err
}

// demo runs the demo with args, printing to w, and returns its figures.
func demo(ctx context.Context, w io.Writer, args []string) (*demoReport, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	duration := fs.Duration("duration", 3*time.Second, "measured `time` per workload and server")
	size := fs.Int("size", 64, "ping-pong message `bytes`")
	conns := fs.Int("conns", 32, "connections for the rate workload")
	warmup := fs.Int("warmup", 2000, "ping-pong warm-up round trips (not recorded)")
	pollFlag := fs.String("poll", "spin", "ustack worker polling `policy`: spin, adaptive or blocking")
	shared := fs.Bool("shared", false, "let the scheduler place servers and clients (default: the benchmark's two-hosts placement, servers on the last CPU, clients on the others)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *duration <= 0 || *duration > 10*time.Minute {
		return nil, fmt.Errorf("-duration %v: want (0, 10m]", *duration)
	}
	if *size < 1 || *size > reflector.MaxUDPPayload(1500) || *conns < 1 || *conns > 10000 || *warmup < 0 {
		return nil, fmt.Errorf("-size must be 1..%d, -conns 1..10000, -warmup ≥ 0", reflector.MaxUDPPayload(1500))
	}
	if _, err := stack.ParsePollPolicy(*pollFlag); err != nil {
		return nil, err
	}
	var pl child.Placement
	if !*shared {
		var err error
		if pl, err = child.OwnTwoHosts(); errors.Is(err, child.ErrOneCPU) {
			return nil, fmt.Errorf("%w; run with -shared to let the scheduler place servers and clients on the one CPU", err)
		} else if err != nil {
			return nil, err
		}
	}
	if err := checkRoot(); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pair, err := vethtest.New(vethtest.Options{})
	if err != nil {
		return nil, err
	}
	defer pair.Close()
	rep := &demoReport{Placement: pl, CPUModel: cpuModel(), Figures: map[string]*demoFigures{}}
	fmt.Fprintf(w, "topology: namespace %s (clients, kernel %v) ⟷ veth ⟷ namespace %s (servers: kernel %v, ustack and the floor %v)\n",
		pair.Kernel.Namespace, pair.Kernel.IPv4, pair.Ustack.Namespace, pair.Ustack.IPv4, vethtest.UstackIPv4)
	fmt.Fprintf(w, "placement: %s; every server and client a process of its own\n", pl)
	fmt.Fprintf(w, "each server: %d-byte ping-pong, %d-connection rate, single-flow bulk, %v each; clients on the kernel's sockets\n\n", *size, *conns, *duration)

	common := []string{"-size", strconv.Itoa(*size), "-conns", strconv.Itoa(*conns), "-duration", duration.String(), "-warmup", strconv.Itoa(*warmup)}
	for _, name := range demoServers {
		host, proto, workloads, server := vethtest.UstackIPv4, "tcp", []string{"pingpong", "rate", "bulk"}, name
		switch name {
		case "kernel":
			host = vethtest.UstackHostIPv4
		case "floor":
			proto, workloads = "udp", []string{"pingpong", "bulk"}
		case "floor-tcp":
			workloads, server = []string{"pingpong", "bulk"}, "floor"
		}
		srv, err := child.Start(exe, pair.Ustack, pl, demoRoleEnv, child.RoleServer, nil, "-server", server, "-iface", pair.Ustack.Link, "-poll", *pollFlag)
		if err != nil {
			return rep, err
		}
		if line, err := srv.ReadLine(30 * time.Second); err != nil || line != "READY" {
			srv.Stop()
			return rep, fmt.Errorf("%s server: %q, %v", name, line, err)
		}
		f := &demoFigures{Server: name}
		rep.Figures[name] = f
		fmt.Fprintf(w, "%-9s", name)
		for _, wl := range workloads {
			if wl == "bulk" && proto == "udp" {
				srv.Send("reset")
			}
			cl, err := child.Start(exe, pair.Kernel, pl, demoRoleEnv, child.RoleClient, nil,
				append([]string{"-workload", wl, "-proto", proto, "-addr", netip.AddrPortFrom(host, demoPort).String()}, common...)...)
			if err != nil {
				srv.Stop()
				return rep, err
			}
			line, err := cl.ReadLine(*duration + time.Minute)
			cl.Stop()
			var r clientFigures
			if err == nil {
				rest, ok := strings.CutPrefix(line, "RESULT ")
				if !ok || json.Unmarshal([]byte(rest), &r) != nil {
					err = fmt.Errorf("unexpected %q", line)
				}
			}
			if err != nil {
				srv.Stop()
				return rep, fmt.Errorf("%s %s: %w", name, wl, err)
			}
			switch {
			case wl == "pingpong":
				f.P50, f.P99, f.P999 = r.P50, r.P99, r.P999
				fmt.Fprintf(w, " ping-pong p50 %.1fµs;", f.P50)
			case wl == "rate":
				f.ReqPerSec = r.ReqPerSec
				fmt.Fprintf(w, " %.0f requests/s;", f.ReqPerSec)
			case proto == "udp":
				srv.Send("sink")
				line, err := srv.ReadLine(5 * time.Second)
				var c reflector.Count
				if rest, ok := strings.CutPrefix(line, "SINK "); err != nil || !ok || json.Unmarshal([]byte(rest), &c) != nil || c.Seconds <= 0 {
					srv.Stop()
					return rep, fmt.Errorf("floor sink: %q, %v", line, err)
				}
				f.BulkGbps, f.BulkFrames = float64(c.Bytes)*8/c.Seconds/1e9, float64(c.Frames)/c.Seconds
				fmt.Fprintf(w, " bulk %.2f Gbit/s (%.0f frames/s)", f.BulkGbps, f.BulkFrames)
			default:
				f.BulkGbps = r.Gbps
				fmt.Fprintf(w, " bulk %.2f Gbit/s", f.BulkGbps)
			}
		}
		fmt.Fprintln(w)
		if err := srv.Stop(); err != nil {
			return rep, fmt.Errorf("%s server: %w", name, err)
		}
	}
	rep.print(w, *size, *conns)
	return rep, nil
}

// print writes the table and the closing lines.
func (r *demoReport) print(w io.Writer, size, conns int) {
	k, u, fl, ft := r.Figures["kernel"], r.Figures["ustack"], r.Figures["floor"], r.Figures["floor-tcp"]
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tRTT p50 µs\tp99\tp99.9\trequests/s\tbulk Gbit/s\t")
	for _, f := range []*demoFigures{k, u, fl, ft} {
		rate, bulk := "-", "-"
		if f.ReqPerSec > 0 {
			rate = fmt.Sprintf("%.0f", f.ReqPerSec)
		}
		if f.BulkGbps > 0 {
			bulk = fmt.Sprintf("%.2f", f.BulkGbps)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%s\t%s\t\n", f.Server, f.P50, f.P99, f.P999, rate, bulk)
	}
	fmt.Fprintf(tw, "ustack ×kernel\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", u.P50/k.P50, u.P99/k.P99, u.P999/k.P999, u.ReqPerSec/k.ReqPerSec, u.BulkGbps/k.BulkGbps)
	fmt.Fprintf(tw, "ustack ×floor\t%s\t%s\t%s\t-\t%s\t\n", floorCell(u.P50, ft.P50, true), floorCell(u.P99, ft.P99, true), floorCell(u.P999, ft.P999, true), floorCell(u.BulkGbps, ft.BulkGbps, false))
	tw.Flush()
	fmt.Fprintln(w)
	for _, l := range r.closing(size, conns) {
		fmt.Fprintln(w, l)
	}
}

// closing says in plain words where ustack wins and where it does not,
// and where the processes ran.
func (r *demoReport) closing(size, conns int) []string {
	k, u, fl, ft := r.Figures["kernel"], r.Figures["ustack"], r.Figures["floor"], r.Figures["floor-tcp"]
	type cmp struct {
		what       string
		ratio      float64
		lowerWins  bool
		floorRatio float64 // 0: no floor figure
	}
	cs := []cmp{
		{fmt.Sprintf("%d-byte round trip, median", size), u.P50 / k.P50, true, u.P50 / ft.P50},
		{fmt.Sprintf("%d-byte round trip, p99", size), u.P99 / k.P99, true, u.P99 / ft.P99},
		{fmt.Sprintf("requests/s over %d connections", conns), u.ReqPerSec / k.ReqPerSec, false, 0},
		// Against floor-tcp's TCP sink, the same kernel client's floor
		// (0 where it has no figure).
		{"single-flow bulk, client to server", u.BulkGbps / k.BulkGbps, false, 0},
	}
	if ft.BulkGbps > 0 {
		cs[3].floorRatio = u.BulkGbps / ft.BulkGbps
	}
	var wins, losses, beaten []string
	for _, c := range cs {
		s := fmt.Sprintf("%s (%.2f× the kernel's", c.what, c.ratio)
		switch {
		case c.floorRatio > 0 && c.lowerWins == (c.floorRatio < 1):
			// A floor no stack can beat, beaten: the floor measured
			// something else, and the ratio is no result.
			beaten = append(beaten, c.what)
			s += ", the floor beaten"
		case c.floorRatio > 0:
			s += fmt.Sprintf(", %.2f× the floor's", c.floorRatio)
		}
		s += ")"
		if c.lowerWins == (c.ratio < 1) {
			wins = append(wins, s)
		} else {
			losses = append(losses, s)
		}
	}
	join := func(s []string) string {
		if len(s) == 0 {
			return "nothing measured here"
		}
		return strings.Join(s, "; ")
	}
	where := "two hosts: servers on a CPU of their own, clients on the others (the benchmark's placement of record)"
	if !r.Placement.Pinned() {
		where = "shared: the scheduler placed servers and clients, so a client may share a CPU with its server (-shared)"
	}
	lines := []string{
		"ustack wins on: " + join(wins) + ".",
		"ustack does not win on: " + join(losses) + ".",
	}
	if len(beaten) > 0 {
		lines = append(lines, "Floor beaten on: "+strings.Join(beaten, "; ")+". A floor no stack can beat was beaten,",
			"so in this run it did not measure what it bounds: those ratios are no result (bench says the same).")
	}
	return append(lines,
		"The floors are raw AF_XDP code with no TCP/IP stack, the least work this path allows: floor-tcp echoes the",
		fmt.Sprintf("client's TCP with no connection state (its round trip %.2f× the floor's UDP one: the client's own TCP),", ft.P50/fl.P50),
		"and round trips are set against it; its TCP sink takes the client's bulk in order, one ACK a batch, and",
		"bulk is set against that. The kernel passes 64 KiB packets between veth ends by pointer where AF_XDP",
		"copies each frame, so the kernel's own bulk is not bounded by the floors.",
		"Placement: "+where+"; CPU: "+r.CPUModel+".",
		"Every contender, workload, JSON and plots: go run ./bench",
	)
}

// floorCell is a figure's ratio to its floor's for the table, or "beaten"
// where the figure is better than the floor's, which no stack can be.
func floorCell(got, floor float64, lowerWins bool) string {
	if got <= 0 || floor <= 0 {
		return "-"
	}
	if lowerWins == (got < floor) {
		return "beaten"
	}
	return fmt.Sprintf("%.2f", got/floor)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown"
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
		fmt.Fprintf(os.Stderr, "ustack-echo demo %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// demoServe runs one server until stdin closes: an echo server on
// demoPort and a discard server on the next port, over the kernel or
// ustack, or the floor (echo, sink and source on those ports). It prints
// READY, then answers "reset" and "sink" (the floor's sink counters as a
// SINK line of JSON).
func demoServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	server := fs.String("server", "", "kernel, ustack or floor")
	iface := fs.String("iface", "", "interface")
	pollFlag := fs.String("poll", "spin", "ustack polling policy")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lns []net.Listener
	var floor *reflector.Floor
	var stop func()
	listen := func(l func(network, address string) (net.Listener, error), addr netip.Addr) error {
		for i := range uint16(2) {
			ln, err := l("tcp", netip.AddrPortFrom(addr, demoPort+i).String())
			if err != nil {
				return err
			}
			lns = append(lns, ln)
		}
		go echo.ServeTCP(lns[0])
		go echo.ServeDiscard(lns[1])
		return nil
	}
	switch *server {
	case "kernel":
		if err := listen(net.Listen, vethtest.UstackHostIPv4); err != nil {
			return err
		}
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
		stop = func() { s.Close() }
		if err := listen(s.Listen, vethtest.UstackIPv4); err != nil {
			s.Close()
			return err
		}
	case "floor":
		f, st, err := reflector.StartFloor(reflector.FloorConfig{Interface: *iface, Addr: vethtest.UstackIPv4, Port: demoPort})
		if err != nil {
			return err
		}
		floor, stop = f, st
	default:
		return fmt.Errorf("-server %q: want kernel, ustack or floor", *server)
	}
	fmt.Println("READY")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "reset":
			if floor != nil {
				floor.ResetSink()
			}
		case "sink":
			var c reflector.Count
			if floor != nil {
				c = floor.Sink().Count()
			}
			b, _ := json.Marshal(c)
			fmt.Printf("SINK %s\n", b)
		}
	}
	for _, ln := range lns {
		ln.Close()
	}
	if stop != nil {
		stop()
	}
	return nil
}

// clientFigures is what a demo client reports, as a RESULT line of JSON.
type clientFigures struct {
	P50, P99, P999 float64 // µs
	ReqPerSec      float64
	Gbps           float64
}

// demoClient runs one workload against a server on the kernel's sockets
// and prints its figures.
func demoClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	workload := fs.String("workload", "pingpong", "pingpong, rate or bulk")
	proto := fs.String("proto", "tcp", "tcp, or udp for the floor")
	addr := fs.String("addr", "", "echo server address; the discard server (or the floor's sink) is on the next port")
	size := fs.Int("size", 64, "ping-pong and rate message bytes")
	conns := fs.Int("conns", 32, "rate connections")
	duration := fs.Duration("duration", 3*time.Second, "measured time")
	warmup := fs.Int("warmup", 2000, "ping-pong warm-up round trips")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil {
		return fmt.Errorf("-addr: %w", err)
	}
	next := netip.AddrPortFrom(ap.Addr(), ap.Port()+1).String()
	ctx := context.Background()
	nd := &net.Dialer{Timeout: 5 * time.Second}
	var r clientFigures
	switch *workload {
	case "pingpong":
		c, err := nd.DialContext(ctx, *proto, *addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := echo.PingPong(ctx, c, echo.PingPongConfig{Size: *size, Warmup: -1, Count: max(*warmup, 1)}); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		h, err := echo.PingPong(ctx, c, echo.PingPongConfig{Size: *size, Warmup: -1, Duration: *duration})
		if err != nil {
			return err
		}
		q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1e3 }
		r.P50, r.P99, r.P999 = q(50), q(99), q(99.9)
	case "rate":
		n, el, err := echo.Rate(ctx, nd.DialContext, echo.RateConfig{Network: "tcp", Address: *addr, Conns: *conns, Size: *size, Duration: *duration, Warmup: 500 * time.Millisecond})
		if err != nil {
			return err
		}
		r.ReqPerSec = float64(n) / el.Seconds()
	case "bulk":
		if *proto == "udp" {
			// The floor's sink counts what arrives; the parent asks it.
			if _, err := reflector.Blast(ctx, nd.DialContext, next, reflector.MaxUDPPayload(1500), *duration); err != nil {
				return err
			}
			break
		}
		c, err := nd.DialContext(ctx, "tcp", next)
		if err != nil {
			return err
		}
		defer c.Close()
		n, el, err := echo.Bulk(ctx, c, *duration)
		if err != nil {
			return err
		}
		r.Gbps = float64(n) * 8 / el.Seconds() / 1e9
	default:
		return fmt.Errorf("-workload %q: want pingpong, rate or bulk", *workload)
	}
	b, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", b)
	return nil
}
