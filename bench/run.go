//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

// contender is one server (and client) configuration.
type contender struct {
	Name      string
	Server    string // startServer kind
	Poll      string // ustack polling policy
	Client    string // clientDialer kind
	Proto     string // tcp, or udp for the floor
	Target    string // "kernel" (the Ustack host's own address) or "ustack"
	Workloads []string
	// Procs is GOMAXPROCS for the contender's processes, 0 for Go's
	// default.
	Procs int
	// FullChecksums turns the kernel end's TX checksum offload off while
	// the contender runs, for a server that drops the partial checksums a
	// default veth peer sends.
	FullChecksums bool
	// Upstream runs a ustack server with netstack's own TCP engine
	// behaviour: segments handed to processor goroutines, every batch
	// acknowledged at once (Config.HandOffTCP, DelayedAck < 0). Only run
	// when named in -contenders.
	Upstream bool
	// Offload is the ustack server's offload setting (serve's -offload):
	// "" for the defaults, "no-gro", "no-gso" or "no-tx-checksum" (run only
	// when named in -contenders).
	Offload string
	// Delay is the floor's busy-waited processing time per batch of
	// replies (floor-1us and the like, run only when named): the round
	// trip a kernel client sees as a function of the server's time.
	Delay time.Duration
}

var allContenders = []contender{
	{"kernel", "kernel", "", "kernel", "tcp", "kernel", []string{"pingpong", "qp", "qp-handler", "qp-bw", "rate", "bulk", "bulk-s2c", "conns"}, 0, false, false, "", 0},
	{"kernel-busypoll", "kernel-busypoll", "", "busypoll", "tcp", "kernel", []string{"pingpong", "rate", "bulk", "bulk-s2c"}, 0, false, false, "", 0},
	{"ustack", "ustack", "spin", "kernel", "tcp", "ustack", []string{"pingpong", "qp", "qp-handler", "qp-bw", "rate", "bulk", "bulk-s2c", "conns"}, 0, false, false, "", 0},
	// The same with one P: the application's goroutines then run on the
	// worker's thread, which on a 2-CPU machine keeps them off the CPU
	// the client needs.
	{"ustack-1p", "ustack", "spin", "kernel", "tcp", "ustack", []string{"pingpong", "qp", "qp-handler", "qp-bw", "rate", "bulk", "bulk-s2c"}, 1, false, false, "", 0},
	{"ustack-adaptive", "ustack", "adaptive", "kernel", "tcp", "ustack", []string{"pingpong", "rate"}, 0, false, false, "", 0},
	{"ustack-blocking", "ustack", "blocking", "kernel", "tcp", "ustack", []string{"pingpong", "rate"}, 0, false, false, "", 0},
	{"ustack-ustack", "ustack", "spin", "ustack", "tcp", "ustack", []string{"pingpong", "qp", "qp-handler", "qp-bw", "rate", "bulk", "bulk-s2c"}, 0, false, false, "", 0},
	// gVisor's endpoint drops a default veth peer's partial checksums
	// (its connections never open), so it runs with full checksums.
	{"gvisor-xdp", "gvisor-xdp", "", "kernel", "tcp", "ustack", []string{"pingpong", "rate", "bulk", "bulk-s2c"}, 0, true, false, "", 0},
	{"floor", "floor", "", "kernel", "udp", "ustack", []string{"pingpong"}, 0, false, false, "", 0},
	{"floor-asavie", "floor-asavie", "", "kernel", "udp", "ustack", []string{"pingpong"}, 0, false, false, "", 0},
	// ustack with upstream netstack's hand-offs and immediate ACKs: what
	// running TCP to completion on the worker and delaying ACKs buy.
	// ustack with one offload changed: what each buys in bulk transfers.
	{Name: "ustack-no-gro", Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: []string{"bulk", "bulk-s2c"}, Offload: "no-gro"},
	{Name: "ustack-no-gso", Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: []string{"bulk", "bulk-s2c"}, Offload: "no-gso"},
	{Name: "ustack-no-tx-checksum", Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: []string{"bulk", "bulk-s2c"}, Offload: "no-tx-checksum"},
	// The floor answering 1, 2 and 4 µs late: with a Go client on the
	// kernel's TCP/UDP, a reply that comes after the client's thread went
	// to sleep costs a wake-up, and on this VM that is most of a round
	// trip.
	{Name: "floor-1us", Server: "floor", Client: "kernel", Proto: "udp", Target: "ustack", Workloads: []string{"pingpong"}, Delay: time.Microsecond},
	{Name: "floor-2us", Server: "floor", Client: "kernel", Proto: "udp", Target: "ustack", Workloads: []string{"pingpong"}, Delay: 2 * time.Microsecond},
	{Name: "floor-4us", Server: "floor", Client: "kernel", Proto: "udp", Target: "ustack", Workloads: []string{"pingpong"}, Delay: 4 * time.Microsecond},
	{Name: "ustack-handoff", Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: []string{"pingpong", "rate", "bulk", "bulk-s2c"}, Upstream: true},
}

// optIn reports whether c runs only when named in -contenders.
func (c contender) optIn() bool { return c.Upstream || c.Offload != "" || c.Delay != 0 }

// allContenderNames lists the contenders that run by default.
func allContenderNames() []string {
	var n []string
	for _, c := range allContenders {
		if !c.optIn() {
			n = append(n, c.Name)
		}
	}
	return n
}

const benchPort = 7000

// procsEnv is the environment for a contender's process of a kind: Go's
// default GOMAXPROCS, as a server linking ustack gets it, except for the
// ustack processes of a contender that names its own (the labelled tuned
// variant).
func procsEnv(c contender, kind string) []string {
	if c.Procs > 0 && kind == "ustack" {
		return []string{fmt.Sprintf("GOMAXPROCS=%d", c.Procs)}
	}
	return nil
}

// result is one measurement (or, in the report, the median of runs).
type result struct {
	Contender string        `json:"contender"`
	Workload  string        `json:"workload"`
	Size      int           `json:"size"`
	Conns     int           `json:"conns,omitempty"`
	Pipeline  int           `json:"pipeline,omitempty"`
	Run       int           `json:"run"`
	Count     int64         `json:"count"`
	Seconds   float64       `json:"seconds"`
	Bytes     int64         `json:"bytes,omitempty"`
	RTT       *rttQuantiles `json:"rtt_us,omitempty"`
	CDF       [][2]float64  `json:"cdf,omitempty"`
	ReqPerSec float64       `json:"requests_per_s,omitempty"`
	Gbps      float64       `json:"gbit_per_s,omitempty"`
	// CPU seconds used during the measured window, and per million
	// requests (round trips for ping-pong).
	ServerCPU     float64 `json:"server_cpu_s"`
	ClientCPU     float64 `json:"client_cpu_s"`
	ServerCPUPerM float64 `json:"server_cpu_s_per_mreq,omitempty"`
	// RSSPerConn is the conns workload's server RSS growth per held
	// connection, in bytes.
	RSSPerConn    float64 `json:"server_rss_bytes_per_conn,omitempty"`
	ClientCPUPerM float64 `json:"client_cpu_s_per_mreq,omitempty"`
	// ServerXDP and ClientXDP are the modes the server's and a ustack
	// client's XDP programs attached in, as they reported them.
	ServerXDP string `json:"server_xdp_mode,omitempty"`
	ClientXDP string `json:"client_xdp_mode,omitempty"`
	// ServerCPUs and ClientCPUs are the CPUs the two processes were
	// allowed when the measured part began (-split pins them).
	ServerCPUs string `json:"server_cpus,omitempty"`
	ClientCPUs string `json:"client_cpus,omitempty"`
	// Breakdown is the ustack server's latency breakdown over the measured
	// window (µs from the request leaving the RX ring to each stage).
	Breakdown []stageTime `json:"breakdown,omitempty"`
	Error     string      `json:"error,omitempty"`
}

// stageTime is one stage of a latency breakdown, in microseconds.
type stageTime struct {
	Stage string  `json:"stage"`
	Count uint64  `json:"count"`
	P50   float64 `json:"p50_us"`
	P90   float64 `json:"p90_us"`
	P99   float64 `json:"p99_us"`
}

// serverTrace asks a ustack server child for its latency breakdown.
func serverTrace(srv *child) []stageTime {
	if _, err := fmt.Fprintln(srv.stdin, "trace"); err != nil {
		return nil
	}
	line, err := srv.readLine(5 * time.Second)
	if err != nil || !strings.HasPrefix(line, "TRACE ") {
		return nil
	}
	var t *stack.TraceStats
	if json.Unmarshal([]byte(line[len("TRACE "):]), &t) != nil || t == nil {
		return nil
	}
	var out []stageTime
	for _, s := range t.Stages {
		us := func(d time.Duration) float64 { return float64(d) / 1e3 }
		out = append(out, stageTime{Stage: s.Stage.String(), Count: s.Count, P50: us(s.P50), P90: us(s.P90), P99: us(s.P99)})
	}
	return out
}

// report is a whole run.
type report struct {
	Machine  machine  `json:"machine"`
	Options  any      `json:"options"`
	Started  string   `json:"started"`
	Results  []result `json:"results"` // every run of every measurement
	Medians  []result `json:"medians"` // per (contender, workload, size)
	Failures []string `json:"failures,omitempty"`
}

type machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	Link     string `json:"link"`
	// XDPMode lists the attach modes the contenders reported.
	XDPMode   string `json:"xdp_mode"`
	SocketMod string `json:"af_xdp_mode"`
	// Placement is -split's pinning, "" where the scheduler placed the
	// processes.
	Placement string `json:"placement,omitempty"`
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Link: "veth pair between two network namespaces, MTU 1500",
		SocketMod: "copy (veth has no zero-copy)"}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				m.CPUModel = strings.TrimSpace(l[strings.Index(l, ":")+1:])
				break
			}
		}
	}
	return m
}

// run builds the topology and measures every contender. It returns the
// report even on error, with what it measured.
func run(ctx context.Context, o options) (*report, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the benchmark builds namespaces and attaches XDP: run it as root (uid %d)", os.Geteuid())
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pair, err := vethtest.New(vethtest.Options{KernelGRO: o.kernelGRO})
	if err != nil {
		return nil, err
	}
	defer pair.Close()
	// The conns workload opens and closes 10,000 connections a run from
	// the client's namespace, and the client's closes leave them in
	// TIME-WAIT for a minute: three runs need more ephemeral ports than
	// Linux's default range (32768-60999) holds. The range is the
	// namespace's own, made and deleted with it.
	if err := pair.Kernel.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_local_port_range", []byte("1024 65535"), 0)
	}); err != nil {
		return nil, fmt.Errorf("widening the client's ephemeral port range: %w", err)
	}
	rep := &report{Machine: describeMachine(), Started: time.Now().UTC().Format(time.RFC3339),
		Options: map[string]any{"quick": o.quick, "duration": o.duration.String(), "warmup": o.warmup, "sizes": o.sizes,
			"conns": o.conns, "pipeline": o.pipeline, "runs": o.runs, "contenders": o.contenders, "split": o.split != nil}}
	if o.kernelGRO {
		rep.Machine.Link += ", GRO on at the client's end"
	}
	rep.Machine.Placement = o.split.String()
	o.log("ustack echo benchmark: %d CPUs (%s), Linux %s, %s\n", rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.Kernel, rep.Machine.Link)
	o.log("topology: %s (client, %v) ⟷ veth ⟷ %s (kernel server %v, ustack %v)\n\n", pair.Kernel.Namespace, pair.Kernel.IPv4,
		pair.Ustack.Namespace, pair.Ustack.IPv4, vethtest.UstackIPv4)
	if o.split != nil {
		o.log("placement (-split): %s\n\n", o.split)
	}

	var plan []contender
	for _, name := range o.contenders {
		for _, c := range allContenders {
			if c.Name == name {
				plan = append(plan, c)
			}
		}
	}
	total := 0
	for _, c := range plan {
		total += len(measurements(c, o)) * o.runs
	}
	step := 0
	// Runs are interleaved (run 1 of every contender, then run 2, …) so
	// that drift on a noisy machine spreads over all of them.
	for r := 1; r <= o.runs; r++ {
		for _, c := range plan {
			if err := ctx.Err(); err != nil {
				rep.finish()
				return rep, err
			}
			ms := measurements(c, o)
			if c.FullChecksums {
				if err := pair.Kernel.SetTxChecksum(false); err != nil {
					rep.Failures = append(rep.Failures, fmt.Sprintf("%s: tx checksum off: %v", c.Name, err))
				}
			}
			srv, err := startServerChild(exe, pair, o.split, c)
			if err != nil {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s: server: %v", c.Name, err))
				o.log("%-16s server failed: %v\n", c.Name, err)
				step += len(ms)
				if c.FullChecksums {
					pair.Kernel.SetTxChecksum(true)
				}
				continue
			}
			for _, m := range ms {
				step++
				o.log("[%d/%d] %-16s %-8s %6dB ", step, total, c.Name, m.Workload, m.Size)
				m.Run = r
				res := measure(ctx, exe, pair, c, srv, m, o)
				rep.Results = append(rep.Results, res)
				o.log("%s\n", res.summary())
			}
			if err := srv.stop(); err != nil {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s: server exit: %v", c.Name, err))
			}
			if c.FullChecksums {
				pair.Kernel.SetTxChecksum(true)
			}
		}
	}
	rep.finish()
	return rep, nil
}

// qpBWSize is the message size of the qp-bw workload (perftest's
// write_bw), the size the queue pairs' bandwidth target is set at.
const qpBWSize = 64 << 10

// qpBWPostList is how many Writes the qp-bw client posts per PostSend
// call (perftest's --post_list): 4 × 64 KiB, the 256 KiB the bulk
// workload writes per call. Over kernel TCP a queue pair writes a posted
// list with one system call; posted one by one, each 64 KiB Write costs
// a system call of its own.
const qpBWPostList = 4

// throughput reports whether a workload measures Gbit/s (a transfer),
// not round trips or requests.
func throughput(workload string) bool {
	return workload == "bulk" || workload == "bulk-s2c" || workload == "qp-bw"
}

// allWorkloads are the workloads a contender can run.
var allWorkloads = []string{"pingpong", "qp", "qp-handler", "qp-bw", "rate", "bulk", "bulk-s2c", "conns"}

// measurements lists what to measure for a contender.
func measurements(c contender, o options) []result {
	var ms []result
	for _, w := range c.Workloads {
		if o.workloads != nil && !o.workloads[w] {
			continue
		}
		switch w {
		case "pingpong", "qp", "qp-handler":
			if w == "qp" && perftest.RaceEnabled {
				continue // write_lat polls memory the queue pair writes
			}
			for _, s := range o.sizes {
				if c.Proto == "udp" && s > 1400 {
					continue
				}
				ms = append(ms, result{Contender: c.Name, Workload: w, Size: s})
			}
		case "rate":
			ms = append(ms, result{Contender: c.Name, Workload: w, Size: 64, Conns: o.conns, Pipeline: o.pipeline})
		case "bulk", "bulk-s2c":
			ms = append(ms, result{Contender: c.Name, Workload: w, Size: 256 << 10})
		case "qp-bw":
			ms = append(ms, result{Contender: c.Name, Workload: w, Size: qpBWSize})
		case "conns":
			ms = append(ms, result{Contender: c.Name, Workload: w, Size: connsMsg, Conns: o.held})
		}
	}
	return ms
}

func (r result) summary() string {
	if r.Error != "" {
		return "FAILED: " + r.Error
	}
	if throughput(r.Workload) {
		return fmt.Sprintf("%7.2f Gbit/s  (server CPU %.2fs)", r.Gbps, r.ServerCPU)
	}
	switch r.Workload {
	case "pingpong", "qp", "qp-handler":
		return fmt.Sprintf("p50 %7.1fµs  p99 %7.1fµs  (%d round trips, server CPU %.2fs)", r.RTT.P50, r.RTT.P99, r.Count, r.ServerCPU)
	case "rate":
		return fmt.Sprintf("%10.0f requests/s  (server CPU %.2fs)", r.ReqPerSec, r.ServerCPU)
	case "conns":
		return fmt.Sprintf("%d connections, %.0f/s, server RSS %.1f KB per connection", r.Count, r.ReqPerSec, r.RSSPerConn/1e3)
	}
	return ""
}

// child is a server or client process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
	done   chan error
	// xdpMode is what a server reported after READY.
	xdpMode string
}

func spawn(exe string, h *vethtest.Host, pl *placement, env []string, role string, args ...string) (*child, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ch := &child{cmd: cmd, stdin: in, stdout: bufio.NewReader(out), stderr: new(bytes.Buffer), done: make(chan error, 1)}
	cmd.Stderr = ch.stderr
	// Forked from a thread inside the namespace, the child lives there
	// (and on the thread's CPUs).
	start := cmd.Start
	if cpus := pl.cpusOf(role); cpus != nil {
		start = func() error { return startOn(cmd, cpus) }
	}
	if err := h.Do(start); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	return ch, nil
}

// readLine reads the child's next line within d.
func (c *child) readLine(d time.Duration) (string, error) {
	type lr struct {
		s   string
		err error
	}
	ch := make(chan lr, 1)
	go func() {
		s, err := c.stdout.ReadString('\n')
		ch <- lr{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return r.s, fmt.Errorf("%v (stderr: %s)", r.err, strings.TrimSpace(c.stderr.String()))
		}
		return r.s, nil
	case <-time.After(d):
		c.cmd.Process.Kill()
		return "", fmt.Errorf("no answer in %v (stderr: %s)", d, strings.TrimSpace(c.stderr.String()))
	}
}

// stop closes the child's stdin and waits up to 10s before killing it.
func (c *child) stop() error {
	c.stdin.Close()
	go func() { c.done <- c.cmd.Wait() }()
	select {
	case err := <-c.done:
		if err != nil {
			return fmt.Errorf("%v (stderr: %s)", err, strings.TrimSpace(c.stderr.String()))
		}
		return nil
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
		return errors.New("did not exit within 10s; killed")
	}
}

func startServerChild(exe string, pair *vethtest.Pair, pl *placement, c contender) (*child, error) {
	ch, err := spawn(exe, pair.Ustack, pl, procsEnv(c, c.Server), "serve", "-contender", c.Server, "-iface", pair.Ustack.Link, "-poll", c.Poll, "-port", strconv.Itoa(benchPort),
		"-upstream="+strconv.FormatBool(c.Upstream), "-offload", c.Offload, "-delay", c.Delay.String())
	if err != nil {
		return nil, err
	}
	line, err := ch.readLine(30 * time.Second)
	if err == nil {
		if mode, ok := strings.CutPrefix(line, "READY"); ok {
			ch.xdpMode = strings.TrimSpace(mode)
		} else {
			err = fmt.Errorf("unexpected %q", line)
		}
	}
	if err != nil {
		ch.stop()
		return nil, err
	}
	return ch, nil
}

// cpuSeconds returns a process's user+system CPU time.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// measure runs one client child and returns its result with CPU times.
func measure(ctx context.Context, exe string, pair *vethtest.Pair, c contender, srv *child, m result, o options) result {
	host := vethtest.UstackHostIPv4
	if c.Target == "ustack" {
		host = vethtest.UstackIPv4
	}
	addr, bulkAddr, sourceAddr, qpAddr := fmt.Sprintf("%v:%d", host, benchPort), fmt.Sprintf("%v:%d", host, benchPort+1), fmt.Sprintf("%v:%d", host, benchPort+2), fmt.Sprintf("%v:%d", host, benchPort+3)
	args := []string{"-dial", c.Client, "-iface", pair.Kernel.Link, "-addr", addr, "-bulk-addr", bulkAddr, "-source-addr", sourceAddr, "-qp-addr", qpAddr, "-proto", c.Proto, "-workload", m.Workload,
		"-size", strconv.Itoa(m.Size), "-conns", strconv.Itoa(o.conns), "-held", strconv.Itoa(o.held), "-pipeline", strconv.Itoa(o.pipeline),
		"-duration", o.duration.String(), "-warmup", strconv.Itoa(o.warmup)}
	cl, err := spawn(exe, pair.Kernel, o.split, procsEnv(c, c.Client), "client", args...)
	if err != nil {
		m.Error = err.Error()
		return m
	}
	limit := o.duration + 60*time.Second
	var s0, c0, rss0 float64
	for {
		line, err := cl.readLine(limit)
		if err != nil {
			m.Error = err.Error()
			cl.stop()
			return m
		}
		switch {
		case line == "HELD":
			m.RSSPerConn = (rssBytes(srv.cmd.Process.Pid) - rss0) / float64(o.held)
			fmt.Fprintln(cl.stdin, "release")
		case line == "START":
			s0, c0, rss0 = cpuSeconds(srv.cmd.Process.Pid), cpuSeconds(cl.cmd.Process.Pid), rssBytes(srv.cmd.Process.Pid)
			m.ServerCPUs, m.ClientCPUs = cpusAllowed(srv.cmd.Process.Pid), cpusAllowed(cl.cmd.Process.Pid)
			fmt.Fprintln(srv.stdin, "reset")
		case line == "END":
			m.ServerCPU = cpuSeconds(srv.cmd.Process.Pid) - s0
			m.ClientCPU = cpuSeconds(cl.cmd.Process.Pid) - c0
		case strings.HasPrefix(line, "RESULT "):
			var cr clientResult
			if err := json.Unmarshal([]byte(line[len("RESULT "):]), &cr); err != nil {
				m.Error = err.Error()
			}
			cl.stop()
			m.Count, m.Seconds, m.Bytes, m.RTT, m.CDF = cr.Count, cr.Seconds, cr.Bytes, cr.RTT, cr.CDF
			m.ServerXDP, m.ClientXDP = srv.xdpMode, cr.XDPMode
			if m.Seconds > 0 {
				if throughput(m.Workload) {
					m.Gbps = float64(m.Bytes) * 8 / m.Seconds / 1e9
				} else {
					m.ReqPerSec = float64(m.Count) / m.Seconds
				}
			}
			if m.Count > 0 {
				m.ServerCPUPerM = m.ServerCPU / float64(m.Count) * 1e6
				m.ClientCPUPerM = m.ClientCPU / float64(m.Count) * 1e6
			}
			if m.Workload == "pingpong" || m.Workload == "qp-handler" {
				m.Breakdown = serverTrace(srv)
			}
			return m
		}
	}
}

// finish computes the medians over runs.
func (r *report) finish() {
	type key struct {
		c, w string
		s    int
	}
	groups := map[key][]result{}
	var order []key
	for _, res := range r.Results {
		k := key{res.Contender, res.Workload, res.Size}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], res)
	}
	r.Medians = nil
	for _, k := range order {
		r.Medians = append(r.Medians, median(groups[k]))
	}
	r.Machine.XDPMode = xdpModes(r.Results)
}

// xdpModes summarises the attach modes the contenders reported: one mode,
// or each contender's when they differ (a generic fallback).
func xdpModes(rs []result) string {
	modes := map[string][]string{}
	var order []string
	for _, x := range rs {
		for _, m := range []string{x.ServerXDP, x.ClientXDP} {
			if m == "" || slices.Contains(modes[m], x.Contender) {
				continue
			}
			if len(modes[m]) == 0 {
				order = append(order, m)
			}
			modes[m] = append(modes[m], x.Contender)
		}
	}
	switch len(order) {
	case 0:
		return "none"
	case 1:
		return order[0]
	}
	var parts []string
	for _, m := range order {
		parts = append(parts, m+" ("+strings.Join(modes[m], ", ")+")")
	}
	return strings.Join(parts, "; ")
}

// median returns the run whose primary figure (p50, requests/s or
// Gbit/s) is the median, so that its figures stay consistent with each
// other.
func median(rs []result) result {
	var ok []result
	for _, r := range rs {
		if r.Error == "" {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return rs[0]
	}
	primary := func(r result) float64 {
		switch {
		case r.RTT != nil:
			return r.RTT.P50
		case throughput(r.Workload):
			return r.Gbps
		}
		return r.ReqPerSec
	}
	sort.Slice(ok, func(i, j int) bool { return primary(ok[i]) < primary(ok[j]) })
	return ok[len(ok)/2]
}
