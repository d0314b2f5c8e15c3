//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ustack-dev/ustack/internal/child"
	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

func TestMain(m *testing.M) {
	maybeRunRole() // children of the benchmark re-execute this binary
	os.Exit(vethtest.Main(m))
}

func TestParseFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"-duration", "1ms"},
		{"-sizes", "0"},
		{"-sizes", "64,abc"},
		{"-qp-sizes", "0"},
		{"-contenders", "kernel,nope"},
		{"-conns", "0"},
		{"-runs", "0"},
		{"extra"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
	o, err := parseFlags([]string{"-quick", "-contenders", "ustack", "-shared"})
	if err != nil {
		t.Fatal(err)
	}
	if o.contenders[0] != "kernel" || o.duration > 400e6 || len(o.sizes) != 1 || o.placement.Pinned() {
		t.Errorf("quick options: %+v", o)
	}
	for _, bad := range [][]string{{"-split", "-shared"}, {"-all", "-contenders", "ustack"}} {
		if _, err := parseFlags(append(bad, "-shared")); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
	o, err = parseFlags([]string{"-all", "-shared"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.contenders) != len(allContenders) {
		t.Errorf("-all runs %v, not all %d contenders", o.contenders, len(allContenders))
	}
	o, err = parseFlags([]string{"-shared"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.contenders, recordNames()) {
		t.Errorf("default contenders %v, want those of record %v", o.contenders, recordNames())
	}
	if !slices.Equal(o.qpSizes, []int{64}) || len(o.sizes) != 3 {
		t.Errorf("default sizes: ping-pong %v, write_lat %v; want three, and 64", o.sizes, o.qpSizes)
	}
	for _, want := range []string{"kernel", "kernel-busypoll", "kernel-gnet", "ustack", "ustack-1p", "ustack-ustack", "floor", "floor-floor", "floor-tcp", "floor-floor-tcp"} {
		if !slices.Contains(recordNames(), want) {
			t.Errorf("%s is not of record", want)
		}
	}
}

// TestPlacementFlags: the two-hosts placement is the default (-split
// still names it), -shared the scheduler's; on a one-CPU process the
// default fails and says to use -shared.
func TestPlacementFlags(t *testing.T) {
	own, err := child.OwnCPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"-split"}} {
		o, err := parseFlags(args)
		if len(own) < 2 {
			if err == nil || !strings.Contains(err.Error(), "-shared") {
				t.Errorf("parseFlags(%q) on CPUs %v: error %v, want one that suggests -shared", args, own, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.placement.Server, own[len(own)-1:]) || !slices.Equal(o.placement.Client, own[:len(own)-1]) {
			t.Errorf("parseFlags(%q): placement %+v, own CPUs %v", args, o.placement, own)
		}
	}
	o, err := parseFlags([]string{"-shared"})
	if err != nil || o.placement.Pinned() {
		t.Errorf("-shared: placement %+v, %v", o.placement, err)
	}
}

// TestHistCDFIsTheWholeDistribution: every distinct value gets its own
// point, fractions rise to 1, and the median sits where the values say.
func TestHistCDFIsTheWholeDistribution(t *testing.T) {
	h := echo.NewHistogram()
	for v := int64(1); v <= 100; v++ {
		h.RecordValue(v * 1000) // 1..100 µs
	}
	cdf := histCDF(h)
	if len(cdf) != 100 {
		t.Fatalf("%d points for 100 distinct values", len(cdf))
	}
	for i := 1; i < len(cdf); i++ {
		if cdf[i][0] <= cdf[i-1][0] || cdf[i][1] <= cdf[i-1][1] {
			t.Fatalf("not increasing at %d: %v, %v", i, cdf[i-1], cdf[i])
		}
	}
	if last := cdf[len(cdf)-1]; last[1] != 1 {
		t.Errorf("last fraction %v", last[1])
	}
	if mid := cdf[49]; mid[1] != 0.5 || mid[0] < 49.9 || mid[0] > 50.1 {
		t.Errorf("50th point %v, want (50 µs, 0.5)", mid)
	}
}

// TestXDPModesReportsWhatAttached: the machine line states the modes the
// contenders reported, not an assumed one.
func TestXDPModesReportsWhatAttached(t *testing.T) {
	rs := []result{
		{Contender: "kernel"},
		{Contender: "ustack", ServerXDP: "generic"},
		{Contender: "ustack", ServerXDP: "generic"},
		{Contender: "ustack-ustack", ServerXDP: "native", ClientXDP: "generic"},
		{Contender: "floor", ServerXDP: "native"},
	}
	if got, want := xdpModes(rs), "generic (ustack, ustack-ustack); native (ustack-ustack, floor)"; got != want {
		t.Errorf("xdpModes = %q, want %q", got, want)
	}
	if got := xdpModes(rs[4:]); got != "native" {
		t.Errorf("xdpModes, native only = %q", got)
	}
	if got := xdpModes(rs[:1]); got != "none" {
		t.Errorf("xdpModes, kernel only = %q", got)
	}
}

// TestPrivilegedQuickRun runs the whole benchmark in -quick mode and checks
// that every contender produced sane figures, without asserting any
// timing: on a 2-vCPU VM the figures are too noisy for that.
//
// It runs in the placement of record (two hosts), or where this process
// may use one CPU only, in the shared one; every contender of record must
// appear, and the report's placement line must name the placement.
func TestPrivilegedQuickRun(t *testing.T) {
	vethtest.Privileged(t)
	exclusive(t)
	own, err := child.OwnCPUs()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-quick", "-out", t.TempDir()}
	if perftest.RaceEnabled {
		// The children are race-built too and run each round trip ten
		// times slower; the queue pairs' workloads count iterations
		// (duration/50µs), so the shortest duration keeps this run in
		// tens of seconds. What it checks is unchanged.
		args = append(args, "-duration", "100ms")
	}
	if len(own) < 2 {
		args = append(args, "-shared")
	}
	o, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	wantServer, wantClient := child.CPUsAllowed(os.Getpid()), child.CPUsAllowed(os.Getpid())
	if o.placement.Pinned() {
		wantServer, wantClient = cpuRange(o.placement.Server), cpuRange(o.placement.Client)
	}
	var log strings.Builder
	o.log = func(f string, a ...any) { log.WriteString(strings.TrimSpace(sprintf(f, a...)) + "\n") }
	rep, err := run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var out strings.Builder
	if err := rep.write(o.out, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + log.String() + out.String())
	if len(rep.Failures) > 0 {
		t.Errorf("failures: %v", rep.Failures)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		key := r.Contender + "/" + r.Workload
		seen[key] = true
		if r.Error != "" {
			t.Errorf("%s: %s", key, r.Error)
			continue
		}
		if r.Seconds <= 0 || math.IsNaN(r.Seconds) || r.ServerCPU < 0 || r.ClientCPU < 0 {
			t.Errorf("%s: seconds %v, cpu %v/%v", key, r.Seconds, r.ServerCPU, r.ClientCPU)
		}
		if xdp := !strings.HasPrefix(r.Contender, "kernel"); xdp && r.ServerXDP != "native" {
			t.Errorf("%s: server reported XDP mode %q, want native on veth", key, r.ServerXDP)
		}
		if r.Contender == "ustack-ustack" && r.ClientXDP != "native" {
			t.Errorf("%s: ustack client reported XDP mode %q, want native on veth", key, r.ClientXDP)
		}
		if r.ServerCPUs != wantServer || r.ClientCPUs != wantClient {
			t.Errorf("%s: %s placement, server on CPUs %q and client on %q, want %q and %q", key, o.placement.Name(), r.ServerCPUs, r.ClientCPUs, wantServer, wantClient)
		}
		switch r.Workload {
		case "pingpong":
			q := r.RTT
			if q == nil || r.Count < 10 || !(q.P50 > 0 && q.P50 <= q.P90 && q.P90 <= q.P99 && q.P99 <= q.P999 && q.P999 <= q.Max) || len(r.CDF) == 0 {
				t.Errorf("%s: implausible RTT %+v over %d round trips", key, q, r.Count)
			}
			checkBreakdown(t, key, r)
		case "qp", "qp-handler":
			q := r.RTT
			if q == nil || r.Count < 1000 || !(q.P50 > 0 && q.P50 <= q.P90 && q.P90 <= q.P99 && q.P99 <= q.P999 && q.P999 <= q.Max) {
				t.Errorf("%s: implausible write_lat RTT %+v over %d iterations", key, q, r.Count)
			}
			if r.Workload == "qp-handler" {
				checkBreakdown(t, key, r)
			}
		case "rate":
			if r.Count < 10 || r.ReqPerSec <= 0 {
				t.Errorf("%s: %d requests, %v/s", key, r.Count, r.ReqPerSec)
			}
		case "bulk", "bulk-s2c":
			if r.Bytes < 1<<20 || r.Gbps <= 0 {
				t.Errorf("%s: %d bytes, %v Gbit/s", key, r.Bytes, r.Gbps)
			}
			checkTransferBusy(t, key, r)
			// The UDP floors count datagrams; the TCP ones (floor-tcp)
			// are measured as the TCP contenders are.
			if udp := contenderByName(r.Contender).Proto == "udp"; udp != (r.FramesPerSec > 0) || udp && r.Bytes != r.Count*int64(r.Size) {
				t.Errorf("%s: %d frames of %d bytes, %d bytes, %v frames/s", key, r.Count, r.Size, r.Bytes, r.FramesPerSec)
			}
			if r.FloorLosses > 0 {
				t.Logf("%s: the floor saw %d losses", key, r.FloorLosses)
			}
		case "qp-bw":
			checkTransferBusy(t, key, r)
			if r.Count < 1000 || r.Bytes != r.Count*int64(r.Size) || r.Gbps <= 0 {
				t.Errorf("%s: %d Writes of %d bytes, %d bytes, %v Gbit/s", key, r.Count, r.Size, r.Bytes, r.Gbps)
			}
		case "conns":
			// Every connection opened and echoed (the client fails the
			// run otherwise); a server holding them grows.
			if r.Count != int64(o.held) || r.ReqPerSec <= 0 || r.RSSPerConn <= 0 {
				t.Errorf("%s: %d of %d connections, %v/s, %v bytes of RSS each", key, r.Count, o.held, r.ReqPerSec, r.RSSPerConn)
			}
			// A ustack server's workers did the connections' work; the
			// CPUs' busy times come in clock ticks, too coarse to
			// assert on a short run.
			if strings.HasPrefix(r.Contender, "ustack") && (r.WorkerBusy <= 0 || r.WorkerBusy > r.Seconds*2) {
				t.Errorf("%s: workers busy %v s in %v s", key, r.WorkerBusy, r.Seconds)
			}
		}
	}
	for _, c := range allContenders {
		if !c.Record {
			if slices.ContainsFunc(rep.Results, func(r result) bool { return r.Contender == c.Name }) {
				t.Errorf("%s ran, but is not of record", c.Name)
			}
			continue
		}
		for _, w := range c.Workloads {
			if w == "qp" && perftest.RaceEnabled {
				continue
			}
			if !seen[c.Name+"/"+w] {
				t.Errorf("no result for %s/%s", c.Name, w)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(o.out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back report
	if err := json.Unmarshal(b, &back); err != nil || len(back.Medians) != len(rep.Medians) {
		t.Errorf("results.json does not round-trip: %v", err)
	}
	if back.Machine.Placement != o.placement.Name() || back.Machine.PlacementDetail != o.placement.String() {
		t.Errorf("results.json's placement %q (%q), ran %q", back.Machine.Placement, back.Machine.PlacementDetail, o.placement)
	}
	if want := "\nplacement: " + o.placement.String() + " ("; !strings.Contains(out.String(), want) {
		t.Errorf("report does not say %q", want)
	}
	for _, f := range []string{"rtt_cdf.png", "bars.png"} {
		if st, err := os.Stat(filepath.Join(o.out, f)); err != nil || st.Size() < 1000 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
}

func sprintf(f string, a ...any) string { return fmt.Sprintf(f, a...) }

// checkBreakdown: ustack servers report a latency breakdown of the
// ping-pong and of write_lat from handlers: every stage, in path order,
// for most round trips.
func checkBreakdown(t *testing.T, key string, r result) {
	t.Helper()
	if c := contenderNamed(r.Contender); c == nil || c.Server != "ustack" {
		return
	}
	if len(r.Breakdown) != 5 {
		t.Errorf("%s: breakdown %+v", key, r.Breakdown)
		return
	}
	for i, s := range r.Breakdown {
		// The tracer samples one request in stack.TraceSample: want
		// at least half of that.
		if s.Count < uint64(r.Count)/(2*stack.TraceSample) || s.P50 <= 0 || i > 0 && s.P50 < r.Breakdown[i-1].P50 {
			t.Errorf("%s: breakdown stage %+v implausible (%d round trips)", key, s, r.Count)
		}
	}
}

// TestPrivilegedSharedRun: with -shared nothing is pinned, every child
// may use this process's CPUs, and the report says so.
func TestPrivilegedSharedRun(t *testing.T) {
	vethtest.Privileged(t)
	exclusive(t)
	o, err := parseFlags([]string{"-quick", "-shared", "-contenders", "ustack", "-workloads", "pingpong", "-out", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	o.log = func(string, ...any) {}
	rep, err := run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) > 0 {
		t.Errorf("failures: %v", rep.Failures)
	}
	if len(rep.Results) != 2 {
		t.Errorf("%d results, want kernel and ustack ping-pong", len(rep.Results))
	}
	// Both sides get the CPUs of the thread that started them, which is
	// fresh and unpinned. (This process's own status shows its main
	// thread's mask, which an earlier test's pinned thread may have been.)
	for _, r := range rep.Results {
		key := r.Contender + "/" + r.Workload
		if r.Error != "" || r.RTT == nil || r.RTT.P50 <= 0 {
			t.Errorf("%s: error %q, RTT %+v", key, r.Error, r.RTT)
		}
		if r.ServerCPUs == "" || r.ServerCPUs != r.ClientCPUs || (runtime.NumCPU() > 1 && !strings.ContainsAny(r.ServerCPUs, "-,")) {
			t.Errorf("%s: server on CPUs %q, client on %q; want the same set of more than one", key, r.ServerCPUs, r.ClientCPUs)
		}
	}
	var out strings.Builder
	rep.printTables(&out)
	if want := "\nplacement: shared: the scheduler places"; !strings.Contains(out.String(), want) || rep.Machine.Placement != child.Shared {
		t.Errorf("report does not say %q (placement %q):\n%s", want, rep.Machine.Placement, out.String())
	}
}

// cpuRange formats CPUs as /proc's Cpus_allowed_list does: "3", "0-2".
func cpuRange(cpus []int) string {
	if len(cpus) >= 2 && cpus[len(cpus)-1]-cpus[0] == len(cpus)-1 {
		return fmt.Sprintf("%d-%d", cpus[0], cpus[len(cpus)-1])
	}
	return child.List(cpus)
}

// TestReportWithoutPingPong: a run of queue-pair workloads only (bench
// -workloads qp-handler) writes its results and tables; it has no
// ping-pong to plot and so writes no plots, rather than failing on them.
func TestReportWithoutPingPong(t *testing.T) {
	q := &rttQuantiles{P50: 30, P90: 40, P99: 60, P999: 80, Max: 100}
	r := &report{Medians: []result{
		{Contender: "kernel", Workload: "qp-handler", Size: 64, Count: 100, RTT: q, CDF: [][2]float64{{30, 0.5}, {100, 1}}},
		{Contender: "ustack-ustack", Workload: "qp-handler", Size: 64, Count: 100, RTT: q, CDF: [][2]float64{{30, 0.5}, {100, 1}}},
	}}
	dir := t.TempDir()
	var out strings.Builder
	if err := r.write(dir, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rtt_cdf.png", "bars.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want no plot without a ping-pong", f, err)
		}
	}
	if !strings.Contains(out.String(), "wrote "+filepath.Join(dir, "results.json")+"\n") {
		t.Errorf("output does not name exactly the file written:\n%s", out.String())
	}
}

// TestReportQueuePairReferences: the report sets the queue-pair latency
// targets beside what the kernel's own queue pair does in the same run,
// and leaves out the references it has no figures for.
func TestReportQueuePairReferences(t *testing.T) {
	rtt := func(p50 float64) *rttQuantiles {
		return &rttQuantiles{P50: p50, P90: p50, P99: p50, P999: p50, Max: p50}
	}
	r := &report{Medians: []result{
		{Contender: "kernel", Workload: "pingpong", Size: 64, Count: 100, RTT: rtt(10)},
		{Contender: "kernel", Workload: "qp", Size: 64, Count: 100, RTT: rtt(20)},
		{Contender: "kernel", Workload: "qp-handler", Size: 64, Count: 100, RTT: rtt(16)},
		{Contender: "ustack", Workload: "qp-handler", Size: 64, Count: 100, RTT: rtt(12)},
	}}
	var out strings.Builder
	r.printTargets(&out)
	got := out.String()
	for _, want := range []string{
		"references (no target; the floors against each other, and the kernel's own queue pair, same client, same run):\n",
		fmt.Sprintf("  %-56s %6.2f\n", "kernel qp write_lat ÷ kernel TCP", 2.0),
		fmt.Sprintf("  %-56s %6.2f\n", "kernel qp write_lat, handlers ÷ kernel TCP", 1.6),
		fmt.Sprintf("  %-56s %6.2f\n", "ustack qp write_lat, handlers ÷ kernel's", 0.75),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	for _, absent := range []string{"ustack qp write_lat ÷", "ustack-ustack qp write_lat, handlers ÷"} {
		if strings.Contains(got, absent) {
			t.Errorf("report has %q without the figures for it:\n%s", absent, got)
		}
	}
}

// exclusive keeps the test's measurements from running beside another
// package's (child.Exclusive).
func exclusive(t *testing.T) {
	release, err := child.Exclusive()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}

// TestReportFloorRatios: each ping-pong is set against the floor with the
// same kind of client (floor-tcp for a kernel TCP socket, floor for a
// kernel UDP one, floor-floor for ustack's AF_XDP client), each bulk
// against the floor with the same kind of client in the same direction
// (floor-tcp's TCP sink and source for a kernel TCP client, floor-floor's
// for an AF_XDP one, none where that floor did not run), and the report's
// placement line names the placement.
func TestReportFloorRatios(t *testing.T) {
	rtt := func(p50 float64) *rttQuantiles {
		return &rttQuantiles{P50: p50, P90: p50, P99: 2 * p50, P999: 2 * p50, Max: 2 * p50}
	}
	pp := func(c string, p50 float64) result {
		return result{Contender: c, Workload: "pingpong", Size: 64, Count: 100, RTT: rtt(p50)}
	}
	bulk := func(c, w string, gbps float64) result {
		return result{Contender: c, Workload: w, Size: 1, Gbps: gbps}
	}
	r := &report{Machine: machine{Placement: child.TwoHosts, PlacementDetail: "two hosts: servers on CPU 1, clients on CPU 0"},
		Medians: []result{
			pp("kernel", 60), pp("ustack", 30), pp("ustack-ustack", 12), pp("floor", 10), pp("floor-floor", 4), pp("floor-tcp", 20),
			bulk("kernel", "bulk", 30), bulk("ustack", "bulk", 6), bulk("floor-floor", "bulk", 8), bulk("floor-tcp", "bulk", 7.5),
			bulk("ustack-ustack", "bulk", 6),
			bulk("kernel", "bulk-s2c", 30), bulk("ustack", "bulk-s2c", 4), bulk("floor-floor", "bulk-s2c", 5), bulk("floor-tcp", "bulk-s2c", 4.5),
		}}
	withTCPFloor := append([]result(nil), r.Medians...)
	for _, c := range []struct {
		contender, workload string
		want                string
	}{
		{"kernel", "pingpong", "3.00x"}, // against floor-tcp's 20 µs
		{"ustack", "pingpong", "1.50x"},
		{"floor", "pingpong", "1.00x"},
		{"floor-tcp", "pingpong", "1.00x"},
		{"ustack-ustack", "pingpong", "3.00x"}, // against floor-floor's 4 µs
		{"floor-floor", "pingpong", "1.00x"},
		{"ustack", "bulk", "0.80x"},        // against floor-tcp's TCP sink
		{"ustack-ustack", "bulk", "0.75x"}, // against floor-floor's blaster
		{"kernel", "bulk", "4.00x"},        // the kernel is not bounded, but has a ratio
		{"ustack", "bulk-s2c", "0.89x"},    // against floor-tcp's TCP source
		{"floor-tcp", "bulk-s2c", "1.00x"},
	} {
		x := r.find(c.contender, c.workload, 0)
		if got := r.floorRatio(x, rttP50); got != c.want {
			t.Errorf("%s %s ×floor = %s, want %s", c.contender, c.workload, got, c.want)
		}
	}
	var out strings.Builder
	r.printTables(&out)
	if want := "\nplacement: two hosts: servers on CPU 1, clients on CPU 0 (the placement of record; -shared for the scheduler's)"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	for _, want := range []string{
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-ustack p50 ≤ 2× floor-floor", 3.0, "not met"),
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack p50 ≤ 1.5× floor-tcp", 1.5, "met"),
		fmt.Sprintf("  %-56s %6.2f\n", "floor-tcp ÷ floor (a kernel client's TCP over its UDP)", 2.0),
		fmt.Sprintf("  %-56s %6.2f\n", "ustack ÷ floor (UDP)", 3.0),
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack bulk server→client ≥ 0.5× floor's", 4/4.5, "met"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("targets lack %q:\n%s", want, out.String())
		}
	}
	// Without floor-tcp's bulk (it does not run above MTU 3506): no
	// floor for a kernel TCP client's bulk either way (floor-floor's
	// source does not bound one).
	r.Medians = slices.DeleteFunc(r.Medians, func(x result) bool { return x.Contender == "floor-tcp" && throughput(x.Workload) })
	for _, c := range []struct{ workload, want string }{{"bulk", "-"}, {"bulk-s2c", "-"}} {
		if got := r.floorRatio(r.find("ustack", c.workload, 0), nil); got != c.want {
			t.Errorf("ustack %s without floor-tcp's ×floor = %s, want %s", c.workload, got, c.want)
		}
	}
	r.Medians = withTCPFloor
	// A spinning kernel client's ping-pong is set against floor-tcp-spin,
	// the same client's floor; kernel-busypoll keeps the UDP floor.
	r.Medians = append(r.Medians, pp("floor-tcp-spin", 8), pp("ustack-handler-spin", 10), pp("kernel-busypoll", 15))
	for _, c := range []struct{ contender, want string }{{"ustack-handler-spin", "1.25x"}, {"floor-tcp-spin", "1.00x"}, {"kernel-busypoll", "1.50x"}} {
		if got := r.floorRatio(r.find(c.contender, "pingpong", 64), rttP50); got != c.want {
			t.Errorf("%s ×floor = %s, want %s", c.contender, got, c.want)
		}
	}
	r.Medians = withTCPFloor
	r.Machine.Placement, r.Machine.PlacementDetail = child.Shared, child.Placement{}.String()
	if got := r.placementLine(); !strings.HasPrefix(got, "placement: shared: ") || !strings.Contains(got, "(-shared;") {
		t.Errorf("shared placement line %q", got)
	}
}

// TestReportServerMemory: a kernel server's memory per held connection is
// its RSS plus its sockets' kernel slab (the slab growth beyond ustack's
// run, the same client's alone); a ustack server's is its RSS.
func TestReportServerMemory(t *testing.T) {
	conns := func(c string, rss, slab float64) result {
		return result{Contender: c, Workload: "conns", Conns: 10000, Count: 10000, ReqPerSec: 5000, RSSPerConn: rss, SlabPerConn: slab}
	}
	r := &report{Medians: []result{
		conns("kernel", 8000, 9000), conns("ustack", 16000, 4500), conns("ustack-handler", 6600, 4700),
	}}
	for c, want := range map[string]float64{"kernel": 12500, "ustack": 16000, "ustack-handler": 6600} {
		if got := r.serverMemPerConn(c); got != want {
			t.Errorf("%s: %v bytes per connection, want %v", c, got, want)
		}
	}
	if got := r.serverMemPerConn("ustack-ustack"); !math.IsNaN(got) {
		t.Errorf("a contender not measured: %v, want NaN", got)
	}
	var out strings.Builder
	r.printConns(&out)
	if want := "12.5  1.00x"; !strings.Contains(out.String(), want) {
		t.Errorf("conns table lacks the kernel's memory %q:\n%s", want, out.String())
	}
	r.printTables(&out)
	for _, want := range []string{
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-handler memory per held connection ≤ 0.6× kernel", 6600.0/12500, "met"),
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack memory per held connection ≤ 1.3× kernel", 16000.0/12500, "met"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("targets lack %q:\n%s", want, out.String())
		}
	}
}

// TestReportConnsCPU: the conns workload's CPU table and targets read a
// ustack server's workers' busy time, and any other server's CPUs'.
func TestReportConnsCPU(t *testing.T) {
	conns := func(c string, rate, client, server, worker float64) result {
		return result{Contender: c, Workload: "conns", Conns: 10000, Count: 10000, Seconds: 10000 / rate, ReqPerSec: rate,
			ClientCPUsBusy: client, ServerCPUsBusy: server, WorkerBusy: worker}
	}
	// kernel: 1 s for 10,000 connections, the server's CPU 0.6 s busy
	// (60 µs each); ustack-handler: 0.5 s, client 0.475 s busy, the
	// worker 0.15 s (15 µs each, 30% of the window).
	// Its kicks took 0.05 s of the worker's 0.15: 10 µs a connection
	// less kicks.
	uh := conns("ustack-handler", 20000, 0.475, 0.5, 0.15)
	uh.KickTime = 0.05
	r := &report{Medians: []result{conns("kernel", 10000, 0.9, 0.6, 0), uh}}
	if got, want := r.serverCPUPerConn("kernel"), 60e-6; math.Abs(got-want) > 1e-12 {
		t.Errorf("kernel: %v s per connection, want %v", got, want)
	}
	if got, want := r.serverCPUPerConn("ustack-handler"), 15e-6; math.Abs(got-want) > 1e-12 {
		t.Errorf("ustack-handler: %v s per connection, want the worker's %v", got, want)
	}
	if got := r.serverCPUPerConn("ustack"); !math.IsNaN(got) {
		t.Errorf("a contender not measured: %v, want NaN", got)
	}
	// Busy time summed over two client CPUs, or two workers, is a share
	// of their time: each was half as busy.
	two := conns("ustack", 20000, 0.475, 0.5, 0.15)
	two.ClientCPUCount, two.Workers = 2, 2
	r2 := &report{Medians: []result{two}}
	if got, want := r2.connsCPUShare("ustack", true), 0.475; math.Abs(got-want) > 1e-9 {
		t.Errorf("client CPUs busy 0.475 s of 0.5 s over 2 CPUs: share %v, want %v", got, want)
	}
	if got, want := r2.connsCPUShare("ustack", false), 0.15; math.Abs(got-want) > 1e-9 {
		t.Errorf("workers busy 0.15 s of 0.5 s over 2 workers: share %v, want %v", got, want)
	}
	var out strings.Builder
	r.printConns(&out)
	want := "ustack-handler 95% 100% 30% 50.0 15.0 0.25x 5.0 10.0 0.17x - -"
	found := false
	for _, l := range strings.Split(out.String(), "\n") {
		found = found || strings.Join(strings.Fields(l), " ") == want
	}
	if !found {
		t.Errorf("CPU table lacks the row %q:\n%s", want, out.String())
	}
	r.printTables(&out)
	for _, want := range []string{
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-handler connections/s ≥ 1.5× kernel", 2.0, "met"),
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-handler conns: client CPUs busy ≥ 90%", 0.95, "met"),
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-handler conns: worker busy ≤ 2/3", 0.3, "met"),
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-handler worker CPU/connection ≤ 0.5× kernel server's", 0.25, "met"),
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-handler worker CPU/conn, kicks apart, ≤ 0.5× kernel's", 10.0/60, "met"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("targets lack %q:\n%s", want, out.String())
		}
	}
}

// checkTransferBusy checks a transfer's record of a ustack server's
// workers' busy time (the CPU per byte figures' source): there, and no
// more than its workers' share of the measured seconds plus the
// START-to-END margin.
func checkTransferBusy(t *testing.T, key string, r result) {
	t.Helper()
	if !strings.HasPrefix(r.Contender, "ustack") {
		if r.WorkerBusy != 0 {
			t.Errorf("%s: workers busy %v s for a server other than ustack's", key, r.WorkerBusy)
		}
		return
	}
	if r.WorkerBusy <= 0 || r.Workers < 1 || r.WorkerBusy > (r.Seconds+2)*float64(r.Workers) {
		t.Errorf("%s: %d workers busy %v s over a %v s transfer", key, r.Workers, r.WorkerBusy, r.Seconds)
	}
}

// TestReportCPUPerByte: a ustack server's CPU per byte is its workers'
// busy time, not its process's CPU (all of it, for a spinning worker);
// another server's is its process's CPU.
func TestReportCPUPerByte(t *testing.T) {
	r := &report{Medians: []result{
		{Contender: "ustack", Workload: "bulk", Bytes: 1e9, ServerCPU: 3, WorkerBusy: 1, Workers: 1},
		{Contender: "ustack", Workload: "qp-bw", Bytes: 1e9, ServerCPU: 3, WorkerBusy: 0.5, Workers: 1},
		{Contender: "kernel", Workload: "bulk", Bytes: 1e9, ServerCPU: 2},
		{Contender: "kernel", Workload: "qp-bw", Bytes: 0, ServerCPU: 2},
	}}
	if got := r.cpuPerByte("ustack", "qp-bw") / r.cpuPerByte("ustack", "bulk"); got != 0.5 {
		t.Errorf("ustack qp-bw ×bulk CPU per byte = %v, want 0.5 (workers' busy time)", got)
	}
	if got := r.cpuPerByte("kernel", "bulk"); got != 2e-9 {
		t.Errorf("kernel bulk CPU per byte = %v, want 2e-9 (process CPU)", got)
	}
	if got := r.cpuPerByte("kernel", "qp-bw"); !math.IsNaN(got) {
		t.Errorf("no bytes: CPU per byte = %v, want NaN", got)
	}
}

// TestReportBeatenFloor: a results file in which ustack contenders beat
// their floors (a round trip below floor-tcp's, a request rate above
// floor-floor's, a bulk rate above floor-tcp's TCP source and sink) is
// reported as "floor beaten" with both figures, never as a ratio, and
// every target it has a figure for is unmeasured; a contender within its
// floor keeps its ratio.
func TestReportBeatenFloor(t *testing.T) {
	rtt := func(p50 float64) *rttQuantiles {
		return &rttQuantiles{P50: p50, P90: p50, P99: 2 * p50, P999: 2 * p50, Max: 2 * p50}
	}
	pp := func(c string, p50 float64) result {
		return result{Contender: c, Workload: "pingpong", Size: 64, Count: 100, RTT: rtt(p50)}
	}
	rate := func(c string, rps float64) result {
		return result{Contender: c, Workload: "rate", Size: 64, Conns: 32, Pipeline: 1, Count: 1000, ReqPerSec: rps}
	}
	bulk := func(c string, gbps float64) result {
		return result{Contender: c, Workload: "bulk-s2c", Size: 1, Gbps: gbps}
	}
	c2s := func(c string, gbps float64) result {
		return result{Contender: c, Workload: "bulk", Size: 1, Gbps: gbps}
	}
	crafted := report{Machine: machine{Placement: child.TwoHosts, PlacementDetail: "two hosts: servers on CPU 1, clients on CPU 0"},
		Medians: []result{
			pp("kernel", 60), pp("ustack-handler", 25.6), pp("floor-tcp", 30.8), // beaten
			pp("ustack-ustack-handler", 9), pp("floor-floor", 6), // within
			rate("kernel", 100000), rate("ustack-ustack-handler", 300000), rate("floor-floor", 250000), // beaten
			bulk("kernel", 30), bulk("ustack", 6.4), bulk("floor-tcp", 5.5), // beaten
			bulk("ustack-ustack", 5.0), bulk("floor-floor", 5.2), // within
			c2s("kernel", 30), c2s("ustack", 6.9), c2s("floor-tcp", 6.0), // beaten
			c2s("ustack-1p", 5.4), // within
		}}
	b, err := json.Marshal(crafted)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.printTables(&out)
	text := out.String()
	for _, want := range []string{
		"floor beaten: ustack-handler pingpong 64B p50: 25.60 µs, its floor floor-tcp 30.80 µs",
		"floor beaten: ustack-ustack-handler rate: 300000.00 requests/s, its floor floor-floor 250000.00 requests/s",
		"floor beaten: ustack bulk-s2c: 6.40 Gbit/s, its floor floor-tcp 5.50 Gbit/s",
		"floor beaten: ustack bulk: 6.90 Gbit/s, its floor floor-tcp 6.00 Gbit/s",
		fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-handler p50 ≤ 1.1× floor-tcp", 25.6/30.8, "unmeasured (floor beaten)"),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "0.83x") || strings.Contains(text, "1.20x") || strings.Contains(text, "1.16x") || strings.Contains(text, "1.15x") {
		t.Errorf("a beaten floor printed as a ratio:\n%s", text)
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasSuffix(l, "  met") || strings.HasSuffix(l, "  not met") {
			t.Errorf("a target judged against beaten floors: %q", l)
		}
	}
	// Within its floor: the ratio stands.
	x := r.find("ustack-ustack-handler", "pingpong", 64)
	if got := r.floorCell(x, rttP50); got != "1.50x" {
		t.Errorf("ustack-ustack-handler ×floor-floor %s, want 1.50x", got)
	}
	if got := r.floorCell(r.find("ustack-1p", "bulk", 0), nil); got != "0.90x" {
		t.Errorf("ustack-1p bulk ×floor-tcp %s, want 0.90x", got)
	}
	if got := len(r.beatenFloors()); got != 4 {
		t.Errorf("%d floors beaten, want 4", got)
	}

	// Without the beaten medians the targets are judged again.
	r.Medians = slices.DeleteFunc(r.Medians, func(x result) bool {
		return x.Contender == "ustack-handler" || x.Workload == "rate" || x.Workload == "bulk-s2c" || x.Contender == "ustack" && x.Workload == "bulk"
	})
	out.Reset()
	r.printTables(&out)
	if strings.Contains(out.String(), "floor beaten") {
		t.Errorf("no floor beaten, but the report says so:\n%s", out.String())
	}
	if want := fmt.Sprintf("  %-56s %6.2f  %s\n", "ustack-ustack-handler p50 ≤ 1.2× floor-floor", 1.5, "not met"); !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}

// TestMarkdownPage: the benchmark's page names the command that makes
// it in its first lines, holds the method and the whole report, and fits
// 400 lines.
func TestMarkdownPage(t *testing.T) {
	rtt := &rttQuantiles{P50: 20, P90: 25, P99: 40, P999: 50, Max: 60}
	r := &report{Machine: machine{CPUs: 2, CPUModel: "Test CPU", Kernel: "6.18", Placement: child.TwoHosts, PlacementDetail: "two hosts"},
		Medians: []result{{Contender: "kernel", Workload: "pingpong", Size: 64, Count: 100, RTT: rtt}}}
	path := filepath.Join(t.TempDir(), "benchmark.md")
	if err := r.writeMarkdown(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 5 || !strings.Contains(strings.Join(lines[:5], "\n"), "`"+markdownCommand+"`") {
		t.Errorf("the page's first lines do not name %q:\n%s", markdownCommand, strings.Join(lines[:min(5, len(lines))], "\n"))
	}
	for _, want := range []string{"## Method", "## The run of record", "Test CPU", "ping-pong, 64 bytes", "targets ("} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if len(lines) > 400 {
		t.Errorf("the page has %d lines, want ≤ 400", len(lines))
	}
}

// TestServerCore: the capacity figure is a ustack server's workers' busy
// time plus what their P ran of the application's goroutines, less the
// kicks, or a kernel server's CPUs' busy time, per request; in the
// scheduler's placement a kernel server's CPUs are its clients' too, and
// there is no figure.
func TestServerCore(t *testing.T) {
	two := child.Placement{Server: []int{1}, Client: []int{0}}
	if two.Name() != child.TwoHosts {
		t.Fatalf("placement %q, want %q", two.Name(), child.TwoHosts)
	}
	u := result{Workload: "rate", WorkerBusy: 0.5, YieldTime: 0.25, KickTime: 0.25, Workers: 1, ServerCPUsBusy: 1}
	if got, how := serverCore(*contenderNamed("ustack"), u, two, 100000); math.Abs(got-5) > 1e-9 || how != coreWorkers {
		t.Errorf("ustack: %v µs/request by %q, want 5 by %q", got, how, coreWorkers)
	}
	k := result{Workload: "rate", ServerCPUsBusy: 0.8}
	if got, how := serverCore(*contenderNamed("kernel"), k, two, 100000); math.Abs(got-8) > 1e-9 || how != coreCPUs {
		t.Errorf("kernel: %v µs/request by %q, want 8 by %q", got, how, coreCPUs)
	}
	if got, how := serverCore(*contenderNamed("kernel"), k, child.Placement{}, 100000); got != 0 || how != "" {
		t.Errorf("kernel, shared placement: %v by %q, want none", got, how)
	}
	if got, _ := serverCore(*contenderNamed("floor-tcp"), u, two, 100000); got != 0 {
		t.Errorf("floor: %v µs/request, want none", got)
	}
}

// TestRoundTripTakenApart: a ustack-to-ustack round trip is the raw
// round trip of the same run plus both stacks' RX-ring-to-TX-ring p50s
// plus a rest, floor-floor-tcp preferred to floor-floor.
func TestRoundTripTakenApart(t *testing.T) {
	bd := func(tx, kicked float64) []stageTime {
		return []stageTime{{Stage: stack.StageTxRing.String(), P50: tx}, {Stage: stack.StageKicked.String(), P50: kicked}}
	}
	x := result{Contender: "ustack-ustack-handler", Workload: "pingpong", Size: 64, RTT: &rttQuantiles{P50: 12},
		Breakdown: bd(1.5, 6), ClientBreakdown: bd(2, 7)}
	ff := result{Contender: "floor-floor", Workload: "pingpong", Size: 64, RTT: &rttQuantiles{P50: 7}}
	r := &report{Medians: []result{x, ff}}
	rt, ok := r.roundTripOf(&r.Medians[0])
	if !ok || rt.FloorName != "floor-floor" || rt.Rest != 12-7-1.5-2 || rt.ServerKick != 4.5 || rt.ClientKick != 5 {
		t.Errorf("round trip %+v (%v)", rt, ok)
	}
	fft := result{Contender: "floor-floor-tcp", Workload: "pingpong", Size: 64, RTT: &rttQuantiles{P50: 8}}
	r.Medians = append(r.Medians, fft)
	if rt, _ := r.roundTripOf(&r.Medians[0]); rt.FloorName != "floor-floor-tcp" || rt.Rest != 12-8-1.5-2 {
		t.Errorf("with floor-floor-tcp: %+v", rt)
	}
	x.ClientBreakdown = nil
	if _, ok := r.roundTripOf(&x); ok {
		t.Error("taken apart without the client's breakdown")
	}
}
