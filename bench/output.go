//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/ustack-dev/ustack/stack"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
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

func ratio(a, b float64) string {
	if b == 0 || a == 0 {
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

func (r *report) printTables(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "\nmachine: %d vCPUs (%s), Linux %s, %s, XDP %s, AF_XDP %s\n", m.CPUs, m.CPUModel, m.Kernel, m.Link, m.XDPMode, m.SocketMod)
	if m.Placement == "" {
		fmt.Fprintf(w, "processes: servers in one namespace, clients in the other, placed by the scheduler; every process runs with Go's default GOMAXPROCS (%d) except ustack-1p's (1)\n", m.CPUs)
	} else {
		fmt.Fprintf(w, "processes: servers in one namespace, clients in the other; pinned (-split): %s; Go's default GOMAXPROCS follows each process's CPUs (ustack-1p's is 1)\n", m.Placement)
	}
	names := r.contenders()
	var sizes []int
	for _, x := range r.Medians {
		if x.Contender == "kernel" && x.Workload == "pingpong" {
			sizes = append(sizes, x.Size)
		}
	}
	for _, size := range sizes {
		kp := r.find("kernel", "pingpong", size)
		fmt.Fprintf(w, "\nping-pong, %d bytes, one connection (RTT in µs; ×k = ratio to kernel, lower is better)\n", size)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "contender\tp50\tp90\tp99\tp99.9\tmax\tp50 ×k\tp99 ×k\tsrv CPU s/Mreq\tcli CPU s/Mreq\t")
		for _, n := range names {
			x := r.find(n, "pingpong", size)
			if x == nil || x.RTT == nil {
				continue
			}
			p50k, p99k := "-", "-"
			if kp != nil {
				p50k, p99k = ratio(x.RTT.P50, kp.RTT.P50), ratio(x.RTT.P99, kp.RTT.P99)
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%.1f\t%.1f\t\n", n, x.RTT.P50, x.RTT.P90, x.RTT.P99, x.RTT.P999, x.RTT.Max,
				p50k, p99k, x.ServerCPUPerM, x.ClientCPUPerM)
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
		fmt.Fprintln(tw, "stage	requests	p50	p90	p99	")
		for _, s := range x.Breakdown {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t\n", s.Stage, s.Count, s.P50, s.P90, s.P99)
		}
		tw.Flush()
	}
	if kr := r.find("kernel", "rate", 0); kr != nil {
		fmt.Fprintf(w, "\nrequests/s, %d connections, 64-byte requests, pipeline %d (×k higher is better)\n", kr.Conns, kr.Pipeline)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "contender\trequests/s\t×k\tsrv CPU s/Mreq\tcli CPU s/Mreq\t")
		for _, n := range names {
			if x := r.find(n, "rate", 0); x != nil {
				fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.1f\t%.1f\t\n", n, x.ReqPerSec, ratio(x.ReqPerSec, kr.ReqPerSec), x.ServerCPUPerM, x.ClientCPUPerM)
			}
		}
		tw.Flush()
	}
	for _, b := range []struct{ wl, dir string }{{"bulk", "client to server"}, {"bulk-s2c", "server to client"}} {
		ks := r.find("kernel", b.wl, 0)
		if ks == nil {
			continue
		}
		fmt.Fprintf(w, "\nsingle-flow bulk transfer, %s (Gbit/s; ×k higher is better)\n", b.dir)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "contender\tGbit/s\t×k\tsrv CPU s\tcli CPU s\t")
		for _, n := range names {
			if x := r.find(n, b.wl, 0); x != nil {
				fmt.Fprintf(tw, "%s\t%.2f\t%s\t%.2f\t%.2f\t\n", n, x.Gbps, ratio(x.Gbps, ks.Gbps), x.ServerCPU, x.ClientCPU)
			}
		}
		tw.Flush()
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
				fmt.Fprintf(w, "\nqueue pairs, write_bw, %d-byte Writes, client to server (Gbit/s; ×bulk = ratio to the contender's own TCP bulk client to server, ×k = to the kernel's; higher is better)\n", x.Size)
				fmt.Fprintln(tw, "contender\tGbit/s\t×bulk\t×k\tsrv CPU s\tcli CPU s\t")
				header = true
			}
			own := "-"
			if ob := r.find(n, "bulk", 0); ob != nil {
				own = ratio(x.Gbps, ob.Gbps)
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%.2f\t%.2f\t\n", n, x.Gbps, own, ratio(x.Gbps, kb.Gbps), x.ServerCPU, x.ClientCPU)
		}
		tw.Flush()
	}
	r.printConns(w)
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
		if x := r.find(c, "pingpong", 64); x != nil && x.RTT != nil {
			return q(x.RTT)
		}
		return math.NaN()
	}
	p50 := func(q *rttQuantiles) float64 { return q.P50 }
	qpP50 := func(c, wl string) float64 {
		if x := r.find(c, wl, 64); x != nil && x.RTT != nil {
			return x.RTT.P50
		}
		return math.NaN()
	}
	p99 := func(q *rttQuantiles) float64 { return q.P99 }
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
	ts := []target{
		// The engine milestone (run to completion, delayed ACK).
		{"ustack p50 ≤ 1.0× kernel", p("ustack", p50) / p("kernel", p50), 1, true},
		{"ustack p99 ≤ 1.0× kernel", p("ustack", p99) / p("kernel", p99), 1, true},
		{"ustack p50 ≤ 1.5× floor", p("ustack", p50) / p("floor", p50), 1.5, true},
		{"ustack-ustack p50 ≤ 0.8× kernel", p("ustack-ustack", p50) / p("kernel", p50), 0.8, true},
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
		{"ustack qp write_bw 64 KiB ≥ 0.9× ustack TCP bulk", val("ustack", "qp-bw") / val("ustack", "bulk"), 0.9, false},
		{"ustack-1p qp write_bw 64 KiB ≥ 0.9× its TCP bulk", val("ustack-1p", "qp-bw") / val("ustack-1p", "bulk"), 0.9, false},
		{"ustack-ustack qp write_bw 64 KiB ≥ 0.9× its TCP bulk", val("ustack-ustack", "qp-bw") / val("ustack-ustack", "bulk"), 0.9, false},
		// Software offload (checksum in the copy, GSO).
		{"ustack bulk client→server ≥ 1.0× kernel", val("ustack", "bulk") / val("kernel", "bulk"), 1, false},
		{"ustack bulk server→client ≥ 1.0× kernel", val("ustack", "bulk-s2c") / val("kernel", "bulk-s2c"), 1, false},
		{"ustack rx→tx ring p50 ≤ 3 µs", stage("ustack", stack.StageTxRing.String()), 3, true},
		// The project's goals.
		{"ustack p50 ≤ 0.6× kernel", p("ustack", p50) / p("kernel", p50), 0.6, true},
		{"ustack p99 ≤ 0.5× kernel", p("ustack", p99) / p("kernel", p99), 0.5, true},
		{"ustack p50 below kernel-busypoll", p("ustack", p50) / p("kernel-busypoll", p50), 1, true},
		{"ustack-ustack p50 ≤ 0.5× kernel", p("ustack-ustack", p50) / p("kernel", p50), 0.5, true},
		{"ustack p50 ≤ 1.3× floor", p("ustack", p50) / p("floor", p50), 1.3, true},
		{"ustack requests/s ≥ 2× kernel", val("ustack", "rate") / val("kernel", "rate"), 2, false},
		{"ustack RTT ≥ 10× better than gvisor-xdp", p("gvisor-xdp", p50) / p("ustack", p50), 10, false},
		{"ustack Gbit/s ≥ 10× gvisor-xdp", val("ustack", "bulk") / val("gvisor-xdp", "bulk"), 10, false},
	}
	fmt.Fprintln(w, "\ntargets (64-byte figures, this run):")
	for _, t := range ts {
		verdict := "not met"
		switch {
		case math.IsNaN(t.got) || math.IsInf(t.got, 0):
			verdict = "not measured"
		case t.le && t.got <= t.limit, !t.le && t.got >= t.limit:
			verdict = "met"
		}
		fmt.Fprintf(w, "  %-56s %6.2f  %s\n", t.what, t.got, verdict)
	}
	// The queue-pair latency targets compare with a TCP ping-pong, but the
	// client of a ustack server's queue pair is the kernel's queue pair:
	// what the kernel's own queue pair achieves in the same run, with the
	// same client, says how far those targets are within reach.
	refs := []struct {
		what string
		got  float64
	}{
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
			fmt.Fprintln(w, "\nreferences (no target; the kernel's own queue pair, same client, same run):")
			header = true
		}
		fmt.Fprintf(w, "  %-56s %6.2f\n", x.what, x.got)
	}
}

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

func (r *report) plotCDF(path string) error {
	p := plot.New()
	p.Title.Text = "64-byte ping-pong RTT, CDF"
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
		l.Dashes = plotutil.Dashes(i / 7)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(n, l)
		i++
	}
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

func (r *report) plotBars(path string) error {
	names := r.contenders()
	var p50, p99 plotter.Values
	var labels []string
	for _, n := range names {
		x := r.find(n, "pingpong", 64)
		if x == nil || x.RTT == nil {
			continue
		}
		labels = append(labels, n)
		p50 = append(p50, x.RTT.P50)
		p99 = append(p99, x.RTT.P99)
	}
	p := plot.New()
	p.Title.Text = "64-byte ping-pong RTT (µs, lower is better)"
	p.Y.Label.Text = "µs"
	w := vg.Points(14)
	b50, err := plotter.NewBarChart(p50, w)
	if err != nil {
		return err
	}
	b50.Color = color.RGBA{R: 40, G: 110, B: 200, A: 255}
	b50.Offset = -w / 2
	b99, err := plotter.NewBarChart(p99, w)
	if err != nil {
		return err
	}
	b99.Color = color.RGBA{R: 220, G: 120, B: 40, A: 255}
	b99.Offset = w / 2
	p.Add(b50, b99)
	p.Legend.Add("p50", b50)
	p.Legend.Add("p99", b99)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(40)
	p.NominalX(labels...)
	p.Y.Min = 0
	for _, v := range p99 {
		p.Y.Max = math.Max(p.Y.Max, v*1.2)
	}
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = -0.9
	return p.Save(9*vg.Inch, 5*vg.Inch, path)
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
