//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ustack-dev/ustack/internal/child"
)

// options are the benchmark's settings.
type options struct {
	quick      bool
	duration   time.Duration // per measurement
	warmup     int           // ping-pong warm-up round trips
	sizes      []int         // ping-pong sizes
	qpSizes    []int         // write_lat sizes (qp, qp-handler)
	conns      int
	held       int // connections the conns workload holds
	pipeline   int
	runs       int
	out        string
	contenders []string
	workloads  map[string]bool // nil: every contender's own
	kernelGRO  bool
	mtu        int // the veth pair's
	// placement pins every server to the last CPU and every client to
	// the others, as on two machines (the default, of record); -shared
	// leaves it empty, and the scheduler places them.
	placement child.Placement
	log       func(format string, args ...any)
	// markdown, if set, is where the benchmark's page goes (-markdown);
	// report, if set, is a results.json to report on instead of a run
	// (-report).
	markdown, report string
}

func main() {
	maybeRunRole()
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		if err == flag.ErrHelp {
			return
		}
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	if opts.report != "" {
		// A report on an earlier run's results, nothing measured.
		rep, err := readReport(opts.report)
		if err == nil {
			rep.printTables(os.Stdout)
			if opts.markdown != "" {
				err = rep.writeMarkdown(opts.markdown)
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, opts)
	if rep != nil {
		if werr := rep.write(opts.out, os.Stdout); werr != nil && err == nil {
			err = werr
		}
		if opts.markdown != "" && err == nil {
			err = rep.writeMarkdown(opts.markdown)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "short run (under a minute): 64-byte ping-pong, fewer connections, short durations")
	duration := fs.Duration("duration", 3*time.Second, "measured `time` per workload and contender")
	warmup := fs.Int("warmup", 2000, "ping-pong warm-up round trips (not recorded)")
	sizes := fs.String("sizes", "64,1024,8192", "comma-separated ping-pong message `sizes` in bytes (the floor uses those ≤ 1400)")
	qpSizes := fs.String("qp-sizes", "64", "comma-separated queue-pair write_lat message `sizes` in bytes (the qp and qp-handler workloads)")
	conns := fs.Int("conns", 32, "connections for the rate workload")
	held := fs.Int("held", 10000, "connections the conns workload opens at once and holds")
	pipeline := fs.Int("pipeline", 1, "requests in flight per connection for the rate workload")
	runs := fs.Int("runs", 1, "repeat every measurement this many times and report medians")
	out := fs.String("out", "results", "`directory` for results.json and the plots")
	mtu := fs.Int("mtu", 1500, "the veth pair's `MTU` (up to 9000); above 3506, frames span UMEM frames (multi-buffer AF_XDP): gvisor-xdp and floor-asavie, which have no multi-buffer path, do not run")
	kernelGRO := fs.Bool("kernel-gro", false, "turn GRO on at the client's (kernel) veth end, as behind a NIC: the kernel then coalesces what ustack sends")
	contenders := fs.String("contenders", "", "comma-separated `contenders` to run (kernel always runs, as the reference; default: the contenders of record, "+strings.Join(recordNames(), ", ")+")")
	all := fs.Bool("all", false, "run every contender, the contenders of record and the rest: "+strings.Join(extraNames(), ", "))
	shared := fs.Bool("shared", false, "let the scheduler place servers and clients, so that a client and its server may share a CPU (default: the two-hosts placement of record, servers pinned to the last CPU this process may use and clients to the others)")
	fs.Bool("split", false, "the two-hosts placement, now the default (accepted for older scripts; conflicts with -shared)")
	workloads := fs.String("workloads", "", "comma-separated `workloads` to run (pingpong, qp, rate, bulk, bulk-s2c, conns; default all of each contender's)")
	markdown := fs.String("markdown", "", "also write the benchmark's page (the method and this run's report, as docs/benchmark.md) to `file`")
	reportFile := fs.String("report", "", "measure nothing: print the report of an earlier run's results.json `file` (with -markdown, its page too)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *reportFile != "" {
		return options{report: *reportFile, markdown: *markdown}, nil
	}
	o := options{quick: *quick, duration: *duration, warmup: *warmup, conns: *conns, held: *held, pipeline: *pipeline, runs: *runs, out: *out, kernelGRO: *kernelGRO, mtu: *mtu, markdown: *markdown,
		log: func(f string, a ...any) { fmt.Printf(f, a...) }}
	for _, l := range []struct {
		flag, v string
		into    *[]int
	}{{"-sizes", *sizes, &o.sizes}, {"-qp-sizes", *qpSizes, &o.qpSizes}} {
		for _, s := range strings.Split(l.v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 || n > 1<<20 {
				return o, fmt.Errorf("%s: %q is not a size from 1 to 1048576", l.flag, s)
			}
			*l.into = append(*l.into, n)
		}
	}
	if o.duration < 100*time.Millisecond || o.duration > 10*time.Minute {
		return o, fmt.Errorf("-duration %v: want 100ms to 10m", o.duration)
	}
	if o.held < 1 || o.held > 100000 {
		return o, fmt.Errorf("-held %d: want 1..100000", o.held)
	}
	if o.warmup < 0 || o.conns < 1 || o.conns > 10000 || o.pipeline < 1 || o.pipeline > 1024 || o.runs < 1 || o.runs > 100 {
		return o, fmt.Errorf("-warmup ≥ 0, -conns 1..10000, -pipeline 1..1024, -runs 1..100")
	}
	split := false
	fs.Visit(func(f *flag.Flag) { split = split || f.Name == "split" && f.Value.String() == "true" })
	if split && *shared {
		return o, errors.New("-split and -shared: choose one placement (-split is the default)")
	}
	if !*shared {
		pl, err := child.OwnTwoHosts()
		if errors.Is(err, child.ErrOneCPU) {
			return o, fmt.Errorf("%w; run with -shared to let the scheduler place servers and clients on the one CPU (figures then are not the two-hosts figures of record)", err)
		}
		if err != nil {
			return o, err
		}
		o.placement = pl
	}
	if *all && *contenders != "" {
		return o, errors.New("-all and -contenders: choose one")
	}
	known := map[string]bool{}
	for _, c := range allContenders {
		known[c.Name] = true
	}
	names := recordNames()
	switch {
	case *all:
		names = append(names, extraNames()...)
	case *contenders != "":
		names = strings.Split(*contenders, ",")
	}
	o.contenders = []string{"kernel"}
	for _, c := range names {
		c = strings.TrimSpace(c)
		if !known[c] {
			var every []string
			for _, c := range allContenders {
				every = append(every, c.Name)
			}
			return o, fmt.Errorf("-contenders: unknown %q (known: %s)", c, strings.Join(every, ", "))
		}
		if c != "kernel" {
			o.contenders = append(o.contenders, c)
		}
	}
	if o.mtu < 1280 || o.mtu > 9000 {
		return o, fmt.Errorf("-mtu %d: want 1280..9000", o.mtu)
	}
	if o.mtu > singleFrameMTU {
		// Contenders whose AF_XDP code takes only single-frame packets
		// cannot run: named ones are an error, the default set skips them.
		kept := o.contenders[:0]
		for _, name := range o.contenders {
			if c := contenderByName(name); c.Server == "ustack" || c.Server == "floor" || strings.HasPrefix(c.Server, "kernel") {
				kept = append(kept, name)
			} else if *contenders != "" {
				return o, fmt.Errorf("-contenders: %s cannot run at -mtu %d (its AF_XDP code has no multi-buffer frames; at most %d)", name, o.mtu, singleFrameMTU)
			}
		}
		o.contenders = kept
	}
	if *workloads != "" {
		o.workloads = map[string]bool{}
		for _, w := range strings.Split(*workloads, ",") {
			w = strings.TrimSpace(w)
			if !slices.Contains(allWorkloads, w) {
				return o, fmt.Errorf("-workloads: unknown %q (known: %s)", w, strings.Join(allWorkloads, ", "))
			}
			o.workloads[w] = true
		}
	}
	if o.quick {
		o.duration = min(o.duration, 400*time.Millisecond)
		o.warmup = min(o.warmup, 300)
		o.sizes, o.qpSizes = []int{64}, []int{64}
		o.conns = min(o.conns, 8)
		o.held = min(o.held, 1000)
		o.runs = 1
	}
	return o, nil
}
