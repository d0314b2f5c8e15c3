//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/ustack-dev/ustack/internal/child"
	"github.com/ustack-dev/ustack/stack"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func (r *report) find(contender, workload string, size int) *result {
	for i := range r.Medians {
		m := &r.Medians[i]
		if m.Contender == contender && m.Workload == workload && (size == 0 || m.Size == size) && m.Error == "" {
			return m
		}
	}
	return nil
}

// cpuPerByte is the server's CPU seconds per byte moved in a transfer
// workload (NaN if not measured): for a ustack server its workers' busy
// time (stack.QueueStats.WorkerBusy: the work, not the empty polls, of
// a worker whose process CPU is its whole life when it spins), for
// another its process's CPU time. A ustack TCP server's application
// reads (a copy a byte) run outside the workers, where a queue pair's
// placement runs on them: qp-bw's ratio to bulk is an upper bound.
func (r *report) cpuPerByte(contender, workload string) float64 {
	x := r.find(contender, workload, 0)
	if x == nil || x.Bytes == 0 {
		return math.NaN()
	}
	if x.WorkerBusy > 0 {
		return x.WorkerBusy / float64(x.Bytes)
	}
	if x.ServerCPU <= 0 {
		return math.NaN()
	}
	return x.ServerCPU / float64(x.Bytes)
}

func ratio(a, b float64) string {
	if b == 0 || a == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// write prints the tables and targets to w and writes results.json and the
// plots to dir.
func (r *report) write(dir string, w io.Writer) error {
	r.printTables(w)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		return err
	}
	wrote := []string{filepath.Join(dir, "results.json")}
	// The plots show the 64-byte ping-pong: a run without it has none.
	if r.hasPingPong64() {
		cdf, bars := filepath.Join(dir, "rtt_cdf.png"), filepath.Join(dir, "bars.png")
		if err := r.plotCDF(cdf); err != nil {
			return fmt.Errorf("cdf plot: %w", err)
		}
		if err := r.plotBars(bars); err != nil {
			return fmt.Errorf("bar chart: %w", err)
		}
		wrote = append(wrote, cdf, bars)
	}
	fmt.Fprintf(w, "\nwrote %s\n", strings.Join(wrote, ", "))
	return nil
}

func (r *report) contenders() []string {
	var names []string
	seen := map[string]bool{}
	for _, m := range r.Medians {
		if !seen[m.Contender] {
			seen[m.Contender] = true
			names = append(names, m.Contender)
		}
	}
	return names
}

// placementLine says where the processes ran, as the report's second
// line.
func (r *report) placementLine() string {
	m := r.Machine
	if m.Placement == child.TwoHosts {
		return fmt.Sprintf("placement: %s (the placement of record; -shared for the scheduler's); servers in one namespace, clients in the other; Go's default GOMAXPROCS follows each process's CPUs (ustack-1p's is 1)", m.PlacementDetail)
	}
	return fmt.Sprintf("placement: %s (-shared; the figures of record use the two-hosts placement); servers in one namespace, clients in the other; every process runs with Go's default GOMAXPROCS (%d) except ustack-1p's (1)", m.PlacementDetail, m.CPUs)
}

// floorRatio is x's figure (RTT p50 or p99 by q, or Gbit/s) over its
// floor's in the same run, "-" where there is none.
func (r *report) floorRatio(x *result, q func(*rttQuantiles) float64) string {
	c := contenderNamed(x.Contender)
	if c == nil {
		return "-"
	}
	f := r.floorResult(*c, x)
	if f == nil {
		return "-"
	}
	if x.RTT != nil && f.RTT != nil {
		return ratio(q(x.RTT), q(f.RTT))
	}
	return ratio(x.Gbps, f.Gbps)
}

func (r *report) printTables(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "\nmachine: %d vCPUs (%s), Linux %s, %s, XDP %s, AF_XDP %s\n", m.CPUs, m.CPUModel, m.Kernel, m.Link, m.XDPMode, m.SocketMod)
	fmt.Fprintf(w, "%s\n", r.placementLine())
	names := r.contenders()
	var sizes []int
	for _, x := range r.Medians {
		if x.Contender == "kernel" && x.Workload == "pingpong" {
			sizes = append(sizes, x.Size)
		}
	}
	for _, size := range sizes {
		kp := r.find("kernel", "pingpong", size)
		fmt.Fprintf(w, "\nping-pong, %d bytes, one connection (RTT in µs; ×k = ratio to kernel, ×gnet = to kernel-gnet, ×floor = to the floor with the same client: floor-tcp for a kernel TCP client, floor for another kernel socket, floor-floor for an AF_XDP client; lower is better)\n", size)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "contender\tp50\tp90\tp99\tp99.9\tmax\tp50 ×k\tp99 ×k\tp50 ×gnet\tp50 ×floor\tp99 ×floor\tsrv CPU s/Mreq\tcli CPU s/Mreq\t")
		gp := r.find("kernel-gnet", "pingpong", size)
		for _, n := range names {
			x := r.find(n, "pingpong", size)
			if x == nil || x.RTT == nil {
				continue
			}
			p50k, p99k, p50g := "-", "-", "-"
			if kp != nil {
				p50k, p99k = ratio(x.RTT.P50, kp.RTT.P50), ratio(x.RTT.P99, kp.RTT.P99)
			}
			if gp != nil && gp.RTT != nil {
				p50g = ratio(x.RTT.P50, gp.RTT.P50)
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t\n", n, x.RTT.P50, x.RTT.P90, x.RTT.P99, x.RTT.P999, x.RTT.Max,
				p50k, p99k, p50g, r.floorCell(x, rttP50), r.floorCell(x, rttP99), x.ServerCPUPerM, x.ClientCPUPerM)
		}
		tw.Flush()
	}
	for _, size := range sizes {
		kp := r.find("kernel", "pingpong", size)
		header := false
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, row := range qpRows(names) {
			n := row.contender
			x := r.find(n, row.workload, size)
			if x == nil || x.RTT == nil {
				continue
			}
			if !header {
				fmt.Fprintf(w, "\nqueue pairs, write_lat, %d bytes, over each contender's TCP (RTT = 2 × perftest's one-way figure, µs; ×k = ratio to the kernel's TCP ping-pong, ×tcp = to the contender's own; \"handlers\": each Write answered from OnInput where it lands)\n", size)
				fmt.Fprintln(tw, "contender\tp50\tp90\tp99\tp99.9\tp50 ×k\tp50 ×tcp\tsrv CPU s/Mreq\t")
				header = true
			}
			if row.workload == "qp-handler" {
				n += ", handlers"
			}
			k, own := "-", "-"
			if kp != nil && kp.RTT != nil {
				k = ratio(x.RTT.P50, kp.RTT.P50)
			}
			if tp := r.find(row.contender, "pingpong", size); tp != nil && tp.RTT != nil {
				own = ratio(x.RTT.P50, tp.RTT.P50)
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%.1f\t\n", n, x.RTT.P50, x.RTT.P90, x.RTT.P99, x.RTT.P999, k, own, x.ServerCPUPerM)
		}
		tw.Flush()
	}
	for _, row := range breakdownRows(names) {
		n := row.contender
		x := r.find(n, row.workload, 64)
		if x == nil || len(x.Breakdown) == 0 {
			continue
		}
		what := "ping-pong"
		if row.workload == "qp-handler" {
			what = "write_lat from handlers (read: the engine on the worker took the Write in; write: its handler posted the answer)"
		}
		fmt.Fprintf(w, "\n%s server, 64-byte %s: latency breakdown (µs from the request leaving the RX ring)\n", n, what)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "stage	sampled	p50	p90	p99	")
		for _, s := range x.Breakdown {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t\n", s.Stage, s.Count, s.P50, s.P90, s.P99)
		}
		tw.Flush()
	}
	r.printRoundTrips(w)
	if kr := r.find("kernel", "rate", 0); kr != nil {
		fmt.Fprintf(w, "\nrequests/s, %d connections, 64-byte requests, pipeline %d (×k, ×gnet, ×floor: ratios to kernel, kernel-gnet and the floor with the same client (floor-tcp for a kernel TCP client, floor-floor for an AF_XDP one), higher is better; core µs/req: the server's CPU per request with the platform's costs apart, and requests per server core-second from it (%s); srv CPU s/Mreq: the server process's CPU time, all of it for a spinning server)\n", kr.Conns, kr.Pipeline, coreLegend)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "contender\trequests/s\t×k\t×gnet\t×floor\tcore µs/req\treq/core-s\tsrv CPU s/Mreq\tcli CPU s/Mreq\t")
		gr := r.find("kernel-gnet", "rate", 0)
		for _, n := range names {
			if x := r.find(n, "rate", 0); x != nil {
				g := "-"
				if gr != nil {
					g = ratio(x.ReqPerSec, gr.ReqPerSec)
				}
				fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t\n", n, x.ReqPerSec, ratio(x.ReqPerSec, kr.ReqPerSec), g, r.rateFloorCell(x),
					coreUs(x), corePerSec(x), x.ServerCPUPerM, x.ClientCPUPerM)
			}
		}
		tw.Flush()
	}
	for _, b := range []struct{ wl, dir string }{{"bulk", "client to server"}, {"bulk-s2c", "server to client"}} {
		ks := r.find("kernel", b.wl, 0)
		if ks == nil {
			continue
		}
		fmt.Fprintf(w, "\nsingle-flow bulk transfer, %s (Gbit/s of payload; ×k = ratio to kernel, ×floor = to the floor with the same client in the same direction: floor-tcp's stateless TCP sink and source for a kernel TCP client (not above MTU 3506), floor-floor's MTU-sized UDP datagrams with copy-mode AF_XDP at both ends for an AF_XDP client; higher is better)\n", b.dir)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "contender\tGbit/s\tframes/s\t×k\t×floor\tsrv CPU s\tcli CPU s\t")
		for _, n := range names {
			if x := r.find(n, b.wl, 0); x != nil {
				fps := "-"
				if x.FramesPerSec > 0 {
					fps = fmt.Sprintf("%.0f", x.FramesPerSec)
				}
				fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\t%.2f\t%.2f\t\n", n, x.Gbps, fps, ratio(x.Gbps, ks.Gbps), r.floorCell(x, nil), x.ServerCPU, x.ClientCPU)
			}
		}
		tw.Flush()
		for _, n := range names {
			if x := r.find(n, b.wl, 0); x != nil && x.FloorLosses > 0 {
				fmt.Fprintf(w, "  %s saw %d losses (its TCP sink's segments past RCV.NXT, its source's returns to SND.UNA)\n", n, x.FloorLosses)
			}
		}
	}
	if kb := r.find("kernel", "bulk", 0); kb != nil {
		header := false
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, n := range names {
			x := r.find(n, "qp-bw", 0)
			if x == nil {
				continue
			}
			if !header {
				fmt.Fprintf(w, "\nqueue pairs, write_bw, %d-byte Writes, client to server (Gbit/s; ×bulk = ratio to the contender's own TCP bulk client to server, ×k = to the kernel's, higher is better; srv CPU/B ×bulk = the server's CPU per byte against its TCP bulk's, lower is better: a ustack server's workers' busy time, without their empty polls: a TCP server's reads copy outside the workers, a queue pair's placement on them, so this bounds the ratio from above)\n", x.Size)
				fmt.Fprintln(tw, "contender\tGbit/s\t×bulk\t×k\tsrv CPU s\tcli CPU s\tsrv CPU/B ×bulk\t")
				header = true
			}
			own := "-"
			if ob := r.find(n, "bulk", 0); ob != nil {
				own = ratio(x.Gbps, ob.Gbps)
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%.2f\t%.2f\t%s\t\n", n, x.Gbps, own, ratio(x.Gbps, kb.Gbps), x.ServerCPU, x.ClientCPU,
				ratio(r.cpuPerByte(n, "qp-bw"), r.cpuPerByte(n, "bulk")))
		}
		tw.Flush()
	}
	r.printConns(w)
	r.printBeatenFloors(w)
	r.printTargets(w)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "failure: %s\n", f)
	}
	for _, x := range r.Results {
		if x.Error != "" {
			fmt.Fprintf(w, "failure: %s %s %dB run %d: %s\n", x.Contender, x.Workload, x.Size, x.Run, x.Error)
		}
	}
}

// printTargets checks the project's performance targets against this run.
func (r *report) printTargets(w io.Writer) {
	p := func(c string, q func(*rttQuantiles) float64) float64 {
		if c == "" {
			return math.NaN()
		}
		if x := r.find(c, "pingpong", 64); x != nil && x.RTT != nil {
			return q(x.RTT)
		}
		return math.NaN()
	}
	p50 := rttP50
	qpP50 := func(c, wl string) float64 {
		if x := r.find(c, wl, 64); x != nil && x.RTT != nil {
			return x.RTT.P50
		}
		return math.NaN()
	}
	p99 := rttP99
	val := func(c, wl string) float64 {
		if x := r.find(c, wl, 0); x != nil {
			if throughput(wl) {
				return x.Gbps
			}
			return x.ReqPerSec
		}
		return math.NaN()
	}
	type target struct {
		what       string
		got, limit float64
		le         bool // got must be ≤ limit (else ≥)
	}
	cpu := func(c string) float64 {
		if x := r.find(c, "rate", 0); x != nil {
			return x.ServerCPUPerM
		}
		return math.NaN()
	}
	core := func(c string) float64 {
		if x := r.find(c, "rate", 0); x != nil && x.ServerCoreUsPerReq > 0 {
			return x.ServerCoreUsPerReq
		}
		return math.NaN()
	}
	stage := func(c, name string) float64 {
		if x := r.find(c, "pingpong", 64); x != nil {
			for _, s := range x.Breakdown {
				if s.Stage == name {
					return s.P50
				}
			}
		}
		return math.NaN()
	}
	mem := r.serverMemPerConn
	// floorVal is the Gbit/s of the floor a contender's transfer is set
	// against in this run (floorOf).
	floorVal := func(c, workload string) float64 {
		x, cc := r.find(c, workload, 0), contenderNamed(c)
		if x == nil || cc == nil {
			return math.NaN()
		}
		if f := r.floorResult(*cc, x); f != nil {
			return f.Gbps
		}
		return math.NaN()
	}
	ts := []target{
		// The engine milestone (run to completion, delayed ACK).
		{"ustack p50 ≤ 1.0× kernel", p("ustack", p50) / p("kernel", p50), 1, true},
		{"ustack p99 ≤ 1.0× kernel", p("ustack", p99) / p("kernel", p99), 1, true},
		{"ustack p50 ≤ 1.5× floor-tcp", p("ustack", p50) / p("floor-tcp", p50), 1.5, true},
		{"ustack-ustack p50 ≤ 0.8× kernel", p("ustack-ustack", p50) / p("kernel", p50), 0.8, true},
		{"ustack-ustack p50 ≤ 2× floor-floor", p("ustack-ustack", p50) / p("floor-floor", p50), 2, true},
		{"ustack requests/s ≥ 1.2× kernel", val("ustack", "rate") / val("kernel", "rate"), 1.2, false},
		{"ustack server CPU/request ≤ kernel's", cpu("ustack") / cpu("kernel"), 1, true},
		{"ustack bulk ≥ 3.2 Gbit/s", val("ustack", "bulk"), 3.2, false},
		// Queue pairs (64-byte write_lat round trip).
		{"ustack qp write_lat ≤ 0.7× ustack TCP", qpP50("ustack", "qp") / p("ustack", p50), 0.7, true},
		{"ustack qp write_lat ≤ 1.0× kernel TCP", qpP50("ustack", "qp") / p("kernel", p50), 1, true},
		{"ustack qp write_lat, handlers, ≤ 0.7× ustack TCP", qpP50("ustack", "qp-handler") / p("ustack", p50), 0.7, true},
		{"ustack qp write_lat, handlers, ≤ 1.0× kernel TCP", qpP50("ustack", "qp-handler") / p("kernel", p50), 1, true},
		// Both ends on ustack, as perftest runs both ends on RDMA.
		{"ustack-ustack qp write_lat, handlers, ≤ 0.7× its TCP", qpP50("ustack-ustack", "qp-handler") / p("ustack-ustack", p50), 0.7, true},
		{"ustack-ustack qp write_lat, handlers, ≤ 1.0× kernel TCP", qpP50("ustack-ustack", "qp-handler") / p("kernel", p50), 1, true},
		// From handlers against the same placement's TCP handler
		// ping-pong (framing and the engine are all a queue pair may
		// add), and against its before in the same run (the queue pairs
		// on netstack's fast path).
		{"ustack qp write_lat, handlers, ≤ 1.15× ustack-handler TCP", qpP50("ustack", "qp-handler") / p("ustack-handler", p50), 1.15, true},
		{"ustack-ustack qp write_lat, handlers, ≤ 1.15× its handler TCP", qpP50("ustack-ustack", "qp-handler") / p("ustack-ustack-handler", p50), 1.15, true},
		{"ustack-ustack qp write_lat, handlers, ≤ 1.0× netstack's", qpP50("ustack-ustack", "qp-handler") / qpP50("ustack-ustack-handler-netstack", "qp-handler"), 1, true},
		{"ustack qp write_bw 64 KiB ≥ 0.95× ustack TCP bulk", val("ustack", "qp-bw") / val("ustack", "bulk"), 0.95, false},
		{"ustack-1p qp write_bw 64 KiB ≥ 0.95× its TCP bulk", val("ustack-1p", "qp-bw") / val("ustack-1p", "bulk"), 0.95, false},
		{"ustack-ustack qp write_bw 64 KiB ≥ 0.95× its TCP bulk", val("ustack-ustack", "qp-bw") / val("ustack-ustack", "bulk"), 0.95, false},
		{"ustack qp write_bw server CPU/byte ≤ its TCP bulk's", r.cpuPerByte("ustack", "qp-bw") / r.cpuPerByte("ustack", "bulk"), 1, true},
		{"ustack-1p qp write_bw server CPU/byte ≤ its TCP bulk's", r.cpuPerByte("ustack-1p", "qp-bw") / r.cpuPerByte("ustack-1p", "bulk"), 1, true},
		{"ustack-ustack qp write_bw server CPU/byte ≤ its bulk's", r.cpuPerByte("ustack-ustack", "qp-bw") / r.cpuPerByte("ustack-ustack", "bulk"), 1, true},
		// Software offload (checksum in the copy, GSO).
		{"ustack bulk client→server ≥ 1.0× kernel", val("ustack", "bulk") / val("kernel", "bulk"), 1, false},
		{"ustack bulk server→client ≥ 1.0× kernel", val("ustack", "bulk-s2c") / val("kernel", "bulk-s2c"), 1, false},
		{"ustack bulk server→client ≥ 0.5× floor's", val("ustack", "bulk-s2c") / floorVal("ustack", "bulk-s2c"), 0.5, false},
		{"ustack rx→tx ring p50 ≤ 3 µs", stage("ustack", stack.StageTxRing.String()), 3, true},
		// The fast path and handler API (stack.Handler).
		{"ustack-handler rx→tx ring p50 ≤ 1.0 µs", stage("ustack-handler", stack.StageTxRing.String()), 1, true},
		{"ustack-1p rx→tx ring p50 ≤ 2.0 µs", stage("ustack-1p", stack.StageTxRing.String()), 2, true},
		{"ustack-handler p50 ≤ 1.1× floor-tcp", p("ustack-handler", p50) / p("floor-tcp", p50), 1.1, true},
		// Against the event loop a Go developer would pick instead.
		{"ustack-handler p50 ≤ 1.0× kernel-gnet", p("ustack-handler", p50) / p("kernel-gnet", p50), 1, true},
		{"ustack-handler requests/s ≥ 1.0× kernel-gnet", val("ustack-handler", "rate") / val("kernel-gnet", "rate"), 1, false},
		{"ustack-1p p50 ≤ 1.2× floor-tcp", p("ustack-1p", p50) / p("floor-tcp", p50), 1.2, true},
		{"ustack-ustack-handler p50 ≤ 1.2× floor-floor", p("ustack-ustack-handler", p50) / p("floor-floor", p50), 1.2, true},
		// The owned fast path's: against the raw round trip, against
		// the TCP-shaped one, and the raw rate ceiling.
		{"ustack-ustack-handler p50 ≤ 1.3× floor-floor", p("ustack-ustack-handler", p50) / p("floor-floor", p50), 1.3, true},
		{"ustack-ustack-handler p50 ≤ 1.1× floor-floor-tcp", p("ustack-ustack-handler", p50) / p("floor-floor-tcp", p50), 1.1, true},
		{"ustack-ustack-handler requests/s ≥ 0.6× floor-floor", val("ustack-ustack-handler", "rate") / val("floor-floor", "rate"), 0.6, false},
		// Against its before in the same run (both ends on netstack's
		// fast path): the workers' time per request, kicks apart.
		{"ustack-ustack-handler worker µs/request ≤ 0.5× netstack's", core("ustack-ustack-handler") / core("ustack-ustack-handler-netstack"), 0.5, true},
		{"ustack-ustack-handler p50 ≤ 1.0× netstack's", p("ustack-ustack-handler", p50) / p("ustack-ustack-handler-netstack", p50), 1, true},
		{"ustack-ustack p50 ≤ 1.5× floor-floor", p("ustack-ustack", p50) / p("floor-floor", p50), 1.5, true},
		{"ustack-ustack-handler requests/s ≥ 2.5× kernel", val("ustack-ustack-handler", "rate") / val("kernel", "rate"), 2.5, false},
		{"ustack-handler requests/s ≥ 1.3× kernel", val("ustack-handler", "rate") / val("kernel", "rate"), 1.3, false},
		{"ustack-1p requests/s ≥ 1.2× kernel", val("ustack-1p", "rate") / val("kernel", "rate"), 1.2, false},
		// Memory per held connection: RSS, plus the kernel's socket
		// objects for a kernel server (which no RSS shows).
		{"ustack-handler memory per held connection ≤ 0.6× kernel", mem("ustack-handler") / mem("kernel"), 0.6, true},
		{"ustack memory per held connection ≤ 1.3× kernel", mem("ustack") / mem("kernel"), 1.3, true},
		// Connection setup: the rate, or, where the Go kernel client's
		// own CPU limits it, that CPU saturated while the worker idles
		// and spends half of a kernel server's CPU per connection.
		{"ustack-handler connections/s ≥ 1.5× kernel", val("ustack-handler", "conns") / val("kernel", "conns"), 1.5, false},
		{"ustack-handler conns: client CPUs busy ≥ 90%", r.connsCPUShare("ustack-handler", true), 0.9, false},
		{"ustack-handler conns: worker busy ≤ 2/3", r.connsCPUShare("ustack-handler", false), 2.0 / 3, true},
		{"ustack-handler worker CPU/connection ≤ 0.5× kernel server's", r.serverCPUPerConn("ustack-handler") / r.serverCPUPerConn("kernel"), 0.5, true},
		// Restated for veth's fact: a copy-mode kick runs the client's
		// receive path inside the server's sendto.
		{"ustack-handler worker CPU/conn, kicks apart, ≤ 0.5× kernel's", r.workerCPUPerConnLessKicks("ustack-handler") / r.serverCPUPerConn("kernel"), 0.5, true},
		// The project's goals.
		{"ustack p50 ≤ 0.6× kernel", p("ustack", p50) / p("kernel", p50), 0.6, true},
		{"ustack p99 ≤ 0.5× kernel", p("ustack", p99) / p("kernel", p99), 0.5, true},
		{"ustack p50 below kernel-busypoll", p("ustack", p50) / p("kernel-busypoll", p50), 1, true},
		{"ustack-ustack p50 ≤ 0.5× kernel", p("ustack-ustack", p50) / p("kernel", p50), 0.5, true},
		{"ustack p50 ≤ 1.3× floor-tcp", p("ustack", p50) / p("floor-tcp", p50), 1.3, true},
		{"ustack-ustack p50 ≤ 1.3× floor-floor", p("ustack-ustack", p50) / p("floor-floor", p50), 1.3, true},
		{"ustack-ustack bulk client→server ≥ 0.8× floor-floor's", val("ustack-ustack", "bulk") / val("floor-floor", "bulk"), 0.8, false},
		{"ustack bulk server→client ≥ 0.8× floor's", val("ustack", "bulk-s2c") / floorVal("ustack", "bulk-s2c"), 0.8, false},
		{"ustack requests/s ≥ 2× kernel", val("ustack", "rate") / val("kernel", "rate"), 2, false},
		{"ustack RTT ≥ 10× better than gvisor-xdp", p("gvisor-xdp", p50) / p("ustack", p50), 10, false},
		{"ustack Gbit/s ≥ 10× gvisor-xdp", val("ustack", "bulk") / val("gvisor-xdp", "bulk"), 10, false},
	}
	fmt.Fprintf(w, "\ntargets (64-byte figures, this run, %s placement; ×kernel and ×floor; a kernel client's TCP round trip against floor-tcp's):\n", r.Machine.Placement)
	beaten := len(r.beatenFloors()) > 0
	for _, t := range ts {
		verdict := "not met"
		switch {
		case math.IsNaN(t.got) || math.IsInf(t.got, 0):
			verdict = "not measured"
		case beaten:
			verdict = "unmeasured (floor beaten)"
		case t.le && t.got <= t.limit, !t.le && t.got >= t.limit:
			verdict = "met"
		}
		fmt.Fprintf(w, "  %-56s %6.2f  %s\n", t.what, t.got, verdict)
	}
	// The queue-pair latency targets compare with a TCP ping-pong, but the
	// client of a ustack server's queue pair is the kernel's queue pair:
	// what the kernel's own queue pair achieves in the same run, with the
	// same client, says how far those targets are within reach. The TCP
	// floor's round trip over the UDP floor's is what the kernel client's
	// TCP costs it over its UDP, which no server can save it; the UDP
	// ratios stand beside the targets' TCP ones.
	refs := []struct {
		what string
		got  float64
	}{
		{"floor-tcp ÷ floor (a kernel client's TCP over its UDP)", p("floor-tcp", p50) / p("floor", p50)},
		{"ustack-handler ÷ floor (UDP)", p("ustack-handler", p50) / p("floor", p50)},
		{"ustack-1p ÷ floor (UDP)", p("ustack-1p", p50) / p("floor", p50)},
		{"ustack ÷ floor (UDP)", p("ustack", p50) / p("floor", p50)},
		{"kernel qp write_lat ÷ kernel TCP", qpP50("kernel", "qp") / p("kernel", p50)},
		{"kernel qp write_lat, handlers ÷ kernel TCP", qpP50("kernel", "qp-handler") / p("kernel", p50)},
		{"ustack qp write_lat ÷ kernel qp write_lat", qpP50("ustack", "qp") / qpP50("kernel", "qp")},
		{"ustack qp write_lat, handlers ÷ kernel's", qpP50("ustack", "qp-handler") / qpP50("kernel", "qp-handler")},
		{"ustack-ustack qp write_lat, handlers ÷ kernel's", qpP50("ustack-ustack", "qp-handler") / qpP50("kernel", "qp-handler")},
	}
	header := false
	for _, x := range refs {
		if math.IsNaN(x.got) || math.IsInf(x.got, 0) {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nreferences (no target; the floors against each other, and the kernel's own queue pair, same client, same run):")
			header = true
		}
		fmt.Fprintf(w, "  %-56s %6.2f\n", x.what, x.got)
	}
}

func rttP50(q *rttQuantiles) float64 { return q.P50 }
func rttP99(q *rttQuantiles) float64 { return q.P99 }

// hasPingPong64 reports whether some contender has a 64-byte ping-pong
// result with an RTT distribution, which the plots need.
func (r *report) hasPingPong64() bool {
	for _, n := range r.contenders() {
		if x := r.find(n, "pingpong", 64); x != nil && x.RTT != nil && len(x.CDF) > 0 {
			return true
		}
	}
	return false
}

// isFloor reports whether a contender is one of the floors (raw AF_XDP
// packet code, no stack), which the plots draw dashed.
func isFloor(name string) bool {
	c := contenderNamed(name)
	return c != nil && (c.Server == "floor" || c.Server == "floor-asavie")
}

// plotCDF draws every contender's whole 64-byte RTT distribution on a
// log-latency axis, the floors dashed.
func (r *report) plotCDF(path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("64-byte ping-pong RTT, CDF (%s placement; floors dashed)", r.Machine.Placement)
	p.X.Label.Text = "RTT (µs, log scale)"
	p.Y.Label.Text = "fraction of round trips"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = false
	p.Legend.Left = false
	i := 0
	for _, n := range r.contenders() {
		x := r.find(n, "pingpong", 64)
		if x == nil || len(x.CDF) == 0 {
			continue
		}
		// A step per histogram bucket: the fraction holds until the
		// next bucket's bound.
		pts := make(plotter.XYs, 0, 2*len(x.CDF))
		prev := 0.0
		for _, c := range x.CDF {
			if c[0] > 0 {
				pts = append(pts, plotter.XY{X: c[0], Y: prev}, plotter.XY{X: c[0], Y: c[1]})
				prev = c[1]
			}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		if isFloor(n) {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(n, l)
		i++
	}
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

// barWorkload is one group of the bar chart: a workload's figure as a
// ratio to the kernel's and to its floor's.
type barWorkload struct {
	label    string
	workload string
	size     int
	q        func(*rttQuantiles) float64 // nil: Gbit/s or requests/s
}

var barWorkloads = []barWorkload{
	{"ping-pong p50", "pingpong", 64, rttP50},
	{"ping-pong p99", "pingpong", 64, rttP99},
	{"requests/s", "rate", 0, nil},
	{"bulk c→s", "bulk", 0, nil},
	{"bulk s→c", "bulk-s2c", 0, nil},
}

// barRatios returns x's ratio to the kernel's figure and to its floor's
// for one workload, 0 where either is missing.
func (r *report) barRatios(n string, b barWorkload) (k, f float64) {
	x, kx := r.find(n, b.workload, b.size), r.find("kernel", b.workload, b.size)
	if x == nil {
		return 0, 0
	}
	fig := func(y *result) float64 {
		switch {
		case b.q != nil && y.RTT != nil:
			return b.q(y.RTT)
		case throughput(y.Workload):
			return y.Gbps
		}
		return y.ReqPerSec
	}
	if kx != nil && fig(kx) > 0 {
		k = fig(x) / fig(kx)
	}
	if c := contenderNamed(n); c != nil {
		if fx := r.floorResult(*c, x); fx != nil && fig(fx) > 0 {
			f = fig(x) / fig(fx)
		}
	}
	return k, f
}

// plotBars draws two panels of grouped bars, one group per workload and
// one bar per contender: the ratio to the kernel's figure, and to the
// floor's.
func (r *report) plotBars(path string) error {
	var names []string
	for _, n := range r.contenders() {
		if n != "kernel" {
			names = append(names, n)
		}
	}
	labels := make([]string, len(barWorkloads))
	for i, b := range barWorkloads {
		labels[i] = b.label
	}
	panel := func(title string, floor bool) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = "ratio (RTT: lower is better; rate, bulk: higher)"
		p.Y.Min = 0
		w := vg.Points(float64(min(60/max(len(names), 1), 12)))
		j := 0
		for _, n := range names {
			vals := make(plotter.Values, len(barWorkloads))
			some := false
			for i, b := range barWorkloads {
				k, f := r.barRatios(n, b)
				v := k
				if floor {
					v = f
				}
				vals[i] = v
				some = some || v > 0
				p.Y.Max = math.Max(p.Y.Max, v*1.1)
			}
			if !some {
				continue
			}
			bc, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return nil, err
			}
			bc.Color = plotutil.Color(j)
			bc.LineStyle.Width = 0
			bc.Offset = w * vg.Length(float64(j)-float64(len(names)-1)/2)
			p.Add(bc)
			p.Legend.Add(n, bc)
			j++
		}
		one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(barWorkloads)) - 0.5, Y: 1}})
		if err != nil {
			return nil, err
		}
		one.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(one)
		p.NominalX(labels...)
		p.Legend.Top = true
		return p, nil
	}
	pk, err := panel(fmt.Sprintf("×kernel per workload, 64 bytes (%s placement)", r.Machine.Placement), false)
	if err != nil {
		return err
	}
	pf, err := panel("×floor per workload (floor-tcp for a kernel TCP client, floor-floor for an AF_XDP one; bulk: in the same direction)", true)
	if err != nil {
		return err
	}
	img := vgimg.New(10*vg.Inch, 9*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(10), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	canvases := plot.Align([][]*plot.Plot{{pk}, {pf}}, tiles, dc)
	pk.Draw(canvases[0][0])
	pf.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// qpRow is a row of the queue-pair tables.
type qpRow struct{ contender, workload string }

// qpRows lists each contender's write_lat, polled, then from handlers.
func qpRows(names []string) []qpRow {
	var rows []qpRow
	for _, n := range names {
		rows = append(rows, qpRow{n, "qp"}, qpRow{n, "qp-handler"})
	}
	return rows
}

// breakdownRows lists the workloads whose ustack servers report a latency
// breakdown: the TCP ping-pong, then write_lat from handlers.
func breakdownRows(names []string) []qpRow {
	var rows []qpRow
	for _, w := range []string{"pingpong", "qp-handler"} {
		for _, n := range names {
			rows = append(rows, qpRow{n, w})
		}
	}
	return rows
}

// readReport reads an earlier run's results.json.
func readReport(path string) (*report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Medians) == 0 {
		return nil, fmt.Errorf("%s: no medians: not a results.json of this benchmark", path)
	}
	return &r, nil
}

// stageP50 is a breakdown's p50 at stage (NaN if absent).
func stageP50(b []stageTime, stage stack.TraceStage) float64 {
	for _, s := range b {
		if s.Stage == stage.String() {
			return s.P50
		}
	}
	return math.NaN()
}

// roundTrip is a ustack-to-ustack round trip taken apart (p50s, µs):
// the raw AF_XDP round trip of the same run (floor-floor's: two one-way
// trips through veth, the XDP programs and the copies into UMEM, and
// the polls that find the frames), each side's stack work (from its RX
// ring to the reply on its TX ring, from the stacks' breakdowns), and
// the rest. The kicks are given apart: a kick returns after the peer
// may already have taken the frame, so it overlaps the peer's poll and
// is part of the floor's round trip, not an addend. p50s do not add
// exactly; the rest takes up the difference.
type roundTrip struct {
	RTT, Floor, ServerStack, ClientStack, Rest, ServerKick, ClientKick float64
	FloorName                                                          string
}

// roundTripOf takes x's 64-byte round trip apart, if both ends are
// ustack's and traced and a floor-floor ran.
func (r *report) roundTripOf(x *result) (roundTrip, bool) {
	if x == nil || x.RTT == nil || len(x.Breakdown) == 0 || len(x.ClientBreakdown) == 0 {
		return roundTrip{}, false
	}
	st, sk := stageP50(x.Breakdown, stack.StageTxRing), stageP50(x.Breakdown, stack.StageKicked)
	ct, ck := stageP50(x.ClientBreakdown, stack.StageTxRing), stageP50(x.ClientBreakdown, stack.StageKicked)
	if math.IsNaN(st + sk + ct + ck) {
		return roundTrip{}, false
	}
	rt := roundTrip{RTT: x.RTT.P50, ServerStack: st, ServerKick: sk - st, ClientStack: ct, ClientKick: ck - ct}
	for _, f := range []string{"floor-floor-tcp", "floor-floor"} {
		if fx := r.find(f, "pingpong", 64); fx != nil && fx.RTT != nil {
			rt.Floor, rt.FloorName = fx.RTT.P50, f
			break
		}
	}
	if rt.FloorName == "" {
		return roundTrip{}, false
	}
	rt.Rest = rt.RTT - rt.Floor - st - ct
	return rt, true
}

// printRoundTrips accounts for the ustack-to-ustack round trips.
func (r *report) printRoundTrips(w io.Writer) {
	header := false
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, n := range r.contenders() {
		rt, ok := r.roundTripOf(r.find(n, "pingpong", 64))
		if !ok {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nustack at both ends, 64-byte round trip taken apart (p50s in µs): the raw AF_XDP round trip of this run (veth, XDP, the copies into UMEM and the polls, both ways), each side's stack from its RX ring to the reply on its TX ring (the stacks' breakdowns), and the rest; the kicks apart, since a kick returns after the peer may have taken the frame\n")
			fmt.Fprintln(tw, "contender\tRTT\traw round trip\tserver stack\tclient stack\trest\tserver kick\tclient kick\t")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f (%s)\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", n, rt.RTT, rt.Floor, rt.FloorName, rt.ServerStack, rt.ClientStack, rt.Rest, rt.ServerKick, rt.ClientKick)
	}
	tw.Flush()
}
