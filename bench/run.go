//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ustack-dev/ustack/internal/child"
	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

// contender is one server (and client) configuration. Adding one is an
// entry in allContenders, plus a server kind in startServer or a client
// kind in clientDialer if it needs a new one.
type contender struct {
	Name string
	// Record marks the contenders of record: they run by default, the
	// others with -all or when named in -contenders.
	Record    bool
	Server    string // startServer kind
	Poll      string // ustack polling policy
	Client    string // clientDialer kind
	Proto     string // tcp, or udp for the floors
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
	// acknowledged at once (Config.Debug.HandOffTCP, DelayedAck < 0).
	Upstream bool
	// Handler serves the echo and discard workloads with ustack's
	// run-to-completion handler API (stack.Handler) instead of a
	// goroutine per net.Conn.
	Handler bool
	// Offload is the ustack server's offload setting (serve's -offload):
	// "" for the defaults, "no-gro", "no-gso" or "no-tx-checksum".
	Offload string
	// Delay is the floor's busy-waited processing time per batch of
	// replies (floor-1us and the like): the round trip a kernel client
	// sees as a function of the server's time.
	Delay time.Duration
	// Fresh makes the floor's TCP echo copy each segment into a fresh
	// frame behind a header template, the checksum in the copy, as a
	// TCP must (reflector.Floor.Fresh): floor-floor-tcp.
	Fresh bool
}

// Workload sets.
var (
	tcpWorkloads  = []string{"pingpong", "qp", "qp-handler", "qp-bw", "rate", "bulk", "bulk-s2c", "conns"}
	pingpongRate  = []string{"pingpong", "rate"}
	pingpongOnly  = []string{"pingpong"}
	bulkWorkloads = []string{"bulk", "bulk-s2c"}
)

var allContenders = []contender{
	// Of record.
	{Name: "kernel", Record: true, Server: "kernel", Client: "kernel", Proto: "tcp", Target: "kernel", Workloads: tcpWorkloads},
	// SO_BUSY_POLL is a setting for one connection's latency: a read
	// that finds nothing polls the device up to busyPollMicros before it
	// returns, so the rate workload's connections, many to a CPU, wait
	// on each other's empty polls (0.07× the kernel's requests/s, and
	// 0.17× with a yield after each empty read). It has no rate row.
	{Name: "kernel-busypoll", Record: true, Server: "kernel-busypoll", Client: "busypoll", Proto: "tcp", Target: "kernel", Workloads: []string{"pingpong", "bulk", "bulk-s2c"}},
	// gnet v2's event loop on the kernel's TCP: what a Go developer
	// picks for lower latency than net, and what the handler API
	// competes with.
	{Name: "kernel-gnet", Record: true, Server: "kernel-gnet", Client: "kernel", Proto: "tcp", Target: "kernel", Workloads: []string{"pingpong", "rate", "bulk"}},
	{Name: "ustack", Record: true, Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: tcpWorkloads},
	// The same with one P: the application's goroutines then run on the
	// worker's thread, which on a 2-CPU machine keeps them off the CPU
	// the client needs.
	{Name: "ustack-1p", Record: true, Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: tcpWorkloads[:7], Procs: 1},
	{Name: "ustack-ustack", Record: true, Server: "ustack", Poll: "spin", Client: "ustack", Proto: "tcp", Target: "ustack", Workloads: tcpWorkloads[:7]},
	// The handler API: the echo runs on the server's worker, no
	// goroutine per connection; with ustack-ustack-handler the client's
	// requests are sent from handlers on its worker too.
	{Name: "ustack-handler", Record: true, Server: "ustack", Poll: "spin", Handler: true, Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: []string{"pingpong", "rate", "bulk", "conns"}},
	{Name: "ustack-ustack-handler", Record: true, Server: "ustack", Poll: "spin", Handler: true, Client: "ustack-handler", Proto: "tcp", Target: "ustack", Workloads: pingpongRate},
	// The same with both ends' handler connections, and queue pairs
	// answering from handlers (qp-handler), left to netstack's fast path
	// (Config.Debug.NetstackFastPath): the owned fast path's before, in
	// the same run.
	{Name: "ustack-ustack-handler-netstack", Record: true, Server: "ustack", Poll: "spin", Handler: true, Client: "ustack-handler-netstack", Proto: "tcp", Target: "ustack", Workloads: []string{"pingpong", "qp-handler", "rate"}, Offload: "netstack-fast-path"},
	// The floors: raw AF_XDP packet code, no TCP/IP stack. floor answers
	// a kernel client's UDP ping-pong, sinks what a kernel UDP socket
	// blasts at it (bulk) and streams MTU-sized datagrams to one that
	// only counts (bulk-s2c); floor-floor has the same packet code at
	// the client's end too.
	{Name: "floor", Record: true, Server: "floor", Client: "kernel", Proto: "udp", Target: "ustack", Workloads: pingpongOnly},
	// floor-floor: AF_XDP at both ends. Its bulk is the copy-mode
	// ceiling each way: an AF_XDP client blasting MTU-sized datagrams
	// into the floor's sink (reflector.BlastXDP), and the floor's
	// source streaming them to an AF_XDP client that counts
	// (reflector.CountStreamXDP); multi-buffer frames above MTU 3506.
	// (A kernel UDP socket's blast, as the floor had, is bounded by
	// the kernel's per-datagram cost: ustack's TCP bulk beat it.)
	{Name: "floor-floor", Record: true, Server: "floor", Client: "floor", Proto: "udp", Target: "ustack", Workloads: []string{"pingpong", "rate", "bulk", "bulk-s2c"}},
	// floor-floor-tcp: TCP-shaped at both ends, still without state:
	// each segment cut into a fresh frame from a header template with
	// the timestamp option, its checksum computed in the copy, and
	// verified on receipt (reflector.DialTCP against a Fresh floor).
	// The least a TCP's per-segment work costs on raw AF_XDP: the
	// floor a ustack-to-ustack round trip is taken apart against.
	{Name: "floor-floor-tcp", Record: true, Server: "floor", Client: "floor-tcp", Proto: "tcp", Target: "ustack", Workloads: pingpongOnly, Fresh: true},
	// floor-tcp: the same floor echoing a kernel client's TCP, with no
	// connection state (reflector.Responder.Reply): the floor of the
	// work ustack's TCP does for that client, whose TCP costs it more
	// than its UDP.
	// Its bulk is the same floor's TCP sink and source for that client
	// (reflector.Floor's TCP on the sink's and source's ports): the sink
	// acknowledges the client's stream in order, once a batch, with a
	// large window; the source sends up to the client's window's right
	// edge from fresh frames, checksum in the copy, with no congestion
	// control. Single-frame segments only: not above MTU 3506.
	{Name: "floor-tcp", Record: true, Server: "floor", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: []string{"pingpong", "rate", "bulk", "bulk-s2c"}},

	// With -all.
	{Name: "ustack-adaptive", Server: "ustack", Poll: "adaptive", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: pingpongRate},
	{Name: "ustack-blocking", Server: "ustack", Poll: "blocking", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: pingpongRate},
	// gVisor's endpoint drops a default veth peer's partial checksums
	// (its connections never open), so it runs with full checksums.
	{Name: "gvisor-xdp", Server: "gvisor-xdp", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: []string{"pingpong", "rate", "bulk", "bulk-s2c"}, FullChecksums: true},
	{Name: "floor-asavie", Server: "floor-asavie", Client: "kernel", Proto: "udp", Target: "ustack", Workloads: pingpongOnly},
	// ustack with one offload changed: what each buys in bulk transfers.
	{Name: "ustack-no-gro", Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: bulkWorkloads, Offload: "no-gro"},
	{Name: "ustack-no-gso", Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: bulkWorkloads, Offload: "no-gso"},
	{Name: "ustack-no-tx-checksum", Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: bulkWorkloads, Offload: "no-tx-checksum"},
	// The floor answering 1, 2 and 4 µs late: with a Go client on the
	// kernel's TCP/UDP, a reply that comes after the client's thread went
	// to sleep costs a wake-up, and on this VM that is most of a round
	// trip.
	{Name: "floor-1us", Server: "floor", Client: "kernel", Proto: "udp", Target: "ustack", Workloads: pingpongOnly, Delay: time.Microsecond},
	{Name: "floor-2us", Server: "floor", Client: "kernel", Proto: "udp", Target: "ustack", Workloads: pingpongOnly, Delay: 2 * time.Microsecond},
	{Name: "floor-4us", Server: "floor", Client: "kernel", Proto: "udp", Target: "ustack", Workloads: pingpongOnly, Delay: 4 * time.Microsecond},
	// A kernel TCP client that spins (SO_BUSY_POLL and spinning reads)
	// against floor-tcp and the handler server: the client never sleeps,
	// so its round trip shows the server's latency, where the default
	// client's p50 depends on whether a reply lands before its thread
	// sleeps (see floorOf).
	{Name: "floor-tcp-spin", Server: "floor", Client: "busypoll", Proto: "tcp", Target: "ustack", Workloads: pingpongOnly},
	{Name: "ustack-handler-spin", Server: "ustack", Poll: "spin", Handler: true, Client: "busypoll", Proto: "tcp", Target: "ustack", Workloads: pingpongOnly},
	{Name: "ustack-1p-spin", Server: "ustack", Poll: "spin", Client: "busypoll", Proto: "tcp", Target: "ustack", Workloads: pingpongOnly, Procs: 1},
	// ustack with upstream netstack's hand-offs and immediate ACKs: what
	// running TCP to completion on the worker and delaying ACKs buy.
	{Name: "ustack-handoff", Server: "ustack", Poll: "spin", Client: "kernel", Proto: "tcp", Target: "ustack", Workloads: []string{"pingpong", "rate", "bulk", "bulk-s2c"}, Upstream: true},
}

// recordNames lists the contenders of record, which run by default.
func recordNames() []string {
	var n []string
	for _, c := range allContenders {
		if c.Record {
			n = append(n, c.Name)
		}
	}
	return n
}

// extraNames lists the contenders -all adds.
func extraNames() []string {
	var n []string
	for _, c := range allContenders {
		if !c.Record {
			n = append(n, c.Name)
		}
	}
	return n
}

// contenderNamed returns the contender of that name, or nil.
func contenderNamed(name string) *contender {
	for i := range allContenders {
		if allContenders[i].Name == name {
			return &allContenders[i]
		}
	}
	return nil
}

// floorOf names the floors a contender's workload may be set against;
// the report takes the first measured in the run. For a ping-pong or a
// rate, the floor with the same kind of client (raw AF_XDP code where the
// client is ustack or a floor; a kernel TCP socket, floor-tcp; other
// kernel sockets, floor). For a bulk transfer, the floor with the same
// kind of client in the same direction: floor-floor's for an AF_XDP
// client, floor-tcp's TCP sink and source for a kernel TCP client (none
// above MTU 3506, where floor-tcp's bulk does not run). floor-floor's
// source does not bound a kernel client: on veth an AF_XDP client's copy
// into its UMEM runs in the sender's kick, a kernel client's copy to its
// reader on its own CPU, and floor-tcp's source to a kernel client
// outran floor-floor's (5.3 against 4.5 Gbit/s, AMD EPYC, 2 vCPUs).
func floorOf(c contender, workload string) []string {
	xdpClient := c.Client == "ustack" || handlerClient(c.Client) || c.Client == "floor" || c.Client == "floor-tcp"
	kernelTCP := (c.Client == "kernel" || c.Client == "busypoll") && c.Proto == "tcp"
	switch workload {
	case "pingpong":
		switch {
		case xdpClient:
			return []string{"floor-floor"}
		case c.Client == "kernel" && c.Proto == "tcp":
			return []string{"floor-tcp"}
		case c.Client == "busypoll" && c.Proto == "tcp" && c.Server != "kernel-busypoll":
			return []string{"floor-tcp-spin"}
		}
		return []string{"floor"}
	case "rate":
		switch {
		case xdpClient:
			return []string{"floor-floor"}
		case c.Client == "kernel" && c.Proto == "tcp":
			return []string{"floor-tcp"}
		}
	case "bulk":
		// On veth a copy-mode send runs the receiver's XDP program and
		// the copy into its UMEM on the sender's CPU, so client to
		// server the client's CPU bounds the transfer: each kind of
		// client has its own floor.
		switch {
		case xdpClient:
			return []string{"floor-floor"}
		case kernelTCP:
			return []string{"floor-tcp"}
		}
	case "bulk-s2c":
		switch {
		case xdpClient:
			return []string{"floor-floor"}
		case kernelTCP:
			return []string{"floor-tcp"}
		}
	}
	return nil
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
	// FramesPerSec is the floors' bulk rate in MTU-sized frames (Count
	// frames, Bytes of UDP payload).
	FramesPerSec float64 `json:"frames_per_s,omitempty"`
	// SentFrames is how many datagrams the kernel end sent in the floor's
	// bulk (client to server), of which Count arrived.
	SentFrames int64 `json:"sent_frames,omitempty"`
	// FloorLosses is how many losses a floor's TCP bulk saw in the
	// measured window (reflector.TCPBulkStats.Losses): segments its sink
	// dropped for arriving past RCV.NXT, and its source's returns to
	// SND.UNA.
	FloorLosses int64 `json:"floor_losses,omitempty"`
	// CPU seconds used during the measured window, and per million
	// requests (round trips for ping-pong).
	ServerCPU     float64 `json:"server_cpu_s"`
	ClientCPU     float64 `json:"client_cpu_s"`
	ServerCPUPerM float64 `json:"server_cpu_s_per_mreq,omitempty"`
	ClientCPUPerM float64 `json:"client_cpu_s_per_mreq,omitempty"`
	// RSSPerConn is the conns workload's server RSS growth per held
	// connection, in bytes.
	RSSPerConn float64 `json:"server_rss_bytes_per_conn,omitempty"`
	// SlabPerConn is the kernel's slab growth over the same window, per
	// held connection: the kernel's socket objects of both ends that are
	// kernel TCP (the client's always; the server's too for kernel).
	SlabPerConn float64 `json:"kernel_slab_bytes_per_conn,omitempty"`
	// The conns workload's CPU over its connect window (START to HELD):
	// the server's and the client's CPUs' busy seconds, whoever ran on
	// them (/proc/stat: the kernel's softirq work too), and a ustack
	// server's workers' busy time (stack.QueueStats.WorkerBusy; a
	// spinning worker's CPU time is the whole window). The transfer
	// workloads (bulk, bulk-s2c, qp-bw) record the workers' busy time
	// too, from START to END.
	ServerCPUsBusy float64 `json:"server_cpus_busy_s,omitempty"`
	ClientCPUsBusy float64 `json:"client_cpus_busy_s,omitempty"`
	WorkerBusy     float64 `json:"worker_busy_s,omitempty"`
	// KickTime is the part of it and of the goroutines' time that the
	// server's kicks took (stack.QueueStats.KickTime): on veth a
	// copy-mode kick runs the client's receive path inside the call.
	KickTime float64 `json:"kick_s,omitempty"`
	// YieldTime is the time the server's workers' Ps ran other
	// goroutines (stack.QueueStats.YieldTime): with one P, as in the
	// placement of record, the application's goroutines.
	YieldTime float64 `json:"yield_s,omitempty"`
	// ServerCoreUsPerReq is the server's CPU per request (rate) or per
	// connection (conns) in µs, with the platform's costs apart: the
	// capacity of one server core. CoreMethod says how it was measured
	// (serverCore); zero where it could not be.
	ServerCoreUsPerReq float64 `json:"server_core_us_per_req,omitempty"`
	CoreMethod         string  `json:"server_core_method,omitempty"`
	// How many CPUs and workers those sums are over (the shares divide
	// by them); zero reads as one.
	ServerCPUCount int `json:"server_cpu_count,omitempty"`
	ClientCPUCount int `json:"client_cpu_count,omitempty"`
	Workers        int `json:"workers,omitempty"`
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
	// ClientBreakdown is a ustack client's, for the ping-pong: its
	// "request" is the server's reply, and from handlers its reply is
	// the next request, so with the server's it accounts for the round
	// trip (roundTripRows).
	ClientBreakdown []stageTime `json:"client_breakdown,omitempty"`
	Error           string      `json:"error,omitempty"`
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
func serverTrace(srv *server) []stageTime {
	if err := srv.Send("trace"); err != nil {
		return nil
	}
	line, err := srv.ReadLine(5 * time.Second)
	if err != nil || !strings.HasPrefix(line, "TRACE ") {
		return nil
	}
	var t *stack.TraceStats
	if json.Unmarshal([]byte(line[len("TRACE "):]), &t) != nil || t == nil {
		return nil
	}
	return traceStages(t)
}

// traceStages converts a ustack latency breakdown to the report's.
func traceStages(t *stack.TraceStats) []stageTime {
	if t == nil {
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
	// Placement names how servers and clients were placed on CPUs:
	// "two-hosts" (of record) or "shared" (the scheduler's);
	// PlacementDetail says it in words, with the CPUs.
	Placement       string `json:"placement"`
	PlacementDetail string `json:"placement_detail"`
}

// singleFrameMTU is the largest MTU whose frames fit one 4 KiB UMEM
// frame after the kernel's RX headroom; above it ustack and the floors
// use multi-buffer AF_XDP, which gvisor-xdp's and asavie's code lacks.
const singleFrameMTU = 3506

// contenderByName returns the contender called name (zero if none).
func contenderByName(name string) contender {
	for _, c := range allContenders {
		if c.Name == name {
			return c
		}
	}
	return contender{}
}

func describeMachine(mtu int) machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Link: fmt.Sprintf("veth pair between two network namespaces, MTU %d", mtu),
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
	pair, err := vethtest.New(vethtest.Options{KernelGRO: o.kernelGRO, MTU: o.mtu})
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
	rep := &report{Machine: describeMachine(o.mtu), Started: time.Now().UTC().Format(time.RFC3339),
		Options: map[string]any{"quick": o.quick, "duration": o.duration.String(), "warmup": o.warmup, "sizes": o.sizes, "qp_sizes": o.qpSizes,
			"conns": o.conns, "pipeline": o.pipeline, "runs": o.runs, "contenders": o.contenders, "placement": o.placement.Name()}}
	if o.kernelGRO {
		rep.Machine.Link += ", GRO on at the client's end"
	}
	rep.Machine.Placement, rep.Machine.PlacementDetail = o.placement.Name(), o.placement.String()
	o.log("ustack echo benchmark: %d CPUs (%s), Linux %s, %s\n", rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.Kernel, rep.Machine.Link)
	o.log("topology: %s (client, %v) ⟷ veth ⟷ %s (kernel server %v, ustack %v)\n\n", pair.Kernel.Namespace, pair.Kernel.IPv4,
		pair.Ustack.Namespace, pair.Ustack.IPv4, vethtest.UstackIPv4)
	o.log("placement: %s\n\n", o.placement)

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
			srv, err := startServerChild(exe, pair, o.placement, c)
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
				if ctx.Err() != nil {
					// Interrupted: stop after the measurement that ran,
					// not after the contender's last.
					break
				}
				step++
				o.log("[%d/%d] %-16s %-8s %6dB ", step, total, c.Name, m.Workload, m.Size)
				m.Run = r
				res := measure(ctx, exe, pair, c, srv, m, o)
				rep.Results = append(rep.Results, res)
				o.log("%s\n", res.summary())
			}
			if err := srv.Stop(); err != nil {
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
			sizes := o.sizes
			if w != "pingpong" {
				sizes = o.qpSizes
			}
			for _, s := range sizes {
				if (c.Proto == "udp" || c.Client == "floor-tcp") && s > 1400 {
					continue // one datagram or segment each way
				}
				ms = append(ms, result{Contender: c.Name, Workload: w, Size: s})
			}
		case "rate":
			ms = append(ms, result{Contender: c.Name, Workload: w, Size: 64, Conns: o.conns, Pipeline: o.pipeline})
		case "bulk", "bulk-s2c":
			if c.Server == "floor" && c.Proto == "tcp" && o.mtu > singleFrameMTU {
				continue // the floor's TCP takes single-frame segments only
			}
			size := 256 << 10 // per write
			if c.Proto == "udp" {
				size = reflector.MaxUDPPayload(o.mtu) // per datagram
			}
			ms = append(ms, result{Contender: c.Name, Workload: w, Size: size})
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
		if r.FloorLosses > 0 {
			return fmt.Sprintf("%7.2f Gbit/s  (server CPU %.2fs; %d losses)", r.Gbps, r.ServerCPU, r.FloorLosses)
		}
		if r.FramesPerSec > 0 {
			return fmt.Sprintf("%7.2f Gbit/s  %.0f frames/s  (server CPU %.2fs)", r.Gbps, r.FramesPerSec, r.ServerCPU)
		}
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

// spawn starts a child of role in host's namespace, placed by pl.
func spawn(exe string, h *vethtest.Host, pl child.Placement, env []string, role child.Role, args ...string) (*child.Child, error) {
	return child.Start(exe, h, pl, roleEnv, role, env, args...)
}

// server is a running server child and what it reported after READY.
type server struct {
	*child.Child
	xdpMode string
}

func startServerChild(exe string, pair *vethtest.Pair, pl child.Placement, c contender) (*server, error) {
	ch, err := spawn(exe, pair.Ustack, pl, procsEnv(c, c.Server), child.RoleServer, "-contender", c.Server, "-iface", pair.Ustack.Link, "-poll", c.Poll, "-port", strconv.Itoa(benchPort),
		"-upstream="+strconv.FormatBool(c.Upstream), "-handler="+strconv.FormatBool(c.Handler), "-offload", c.Offload, "-delay", c.Delay.String(),
		"-fresh="+strconv.FormatBool(c.Fresh))
	if err != nil {
		return nil, err
	}
	srv := &server{Child: ch}
	line, err := ch.ReadLine(30 * time.Second)
	if err == nil {
		if mode, ok := strings.CutPrefix(line, "READY"); ok {
			srv.xdpMode = strings.TrimSpace(mode)
		} else {
			err = fmt.Errorf("unexpected %q", line)
		}
	}
	if err != nil {
		ch.Stop()
		return nil, err
	}
	return srv, nil
}

// measure runs one client child and returns its result with CPU times.
func measure(ctx context.Context, exe string, pair *vethtest.Pair, c contender, srv *server, m result, o options) result {
	host := vethtest.UstackHostIPv4
	if c.Target == "ustack" {
		host = vethtest.UstackIPv4
	}
	addr, bulkAddr, sourceAddr, qpAddr := fmt.Sprintf("%v:%d", host, benchPort), fmt.Sprintf("%v:%d", host, benchPort+1), fmt.Sprintf("%v:%d", host, benchPort+2), fmt.Sprintf("%v:%d", host, benchPort+3)
	args := []string{"-dial", c.Client, "-iface", pair.Kernel.Link, "-addr", addr, "-bulk-addr", bulkAddr, "-source-addr", sourceAddr, "-qp-addr", qpAddr, "-proto", c.Proto, "-workload", m.Workload,
		"-size", strconv.Itoa(m.Size), "-conns", strconv.Itoa(o.conns), "-held", strconv.Itoa(o.held), "-pipeline", strconv.Itoa(o.pipeline),
		"-duration", o.duration.String(), "-warmup", strconv.Itoa(o.warmup)}
	cl, err := spawn(exe, pair.Kernel, o.placement, procsEnv(c, c.Client), child.RoleClient, args...)
	if err != nil {
		m.Error = err.Error()
		return m
	}
	limit := o.duration + 60*time.Second
	var s0, c0, rss0, slab0, sb0, cb0, wb0, k0, y0 float64
	sp, cp := srv.Pid(), cl.Pid()
	for {
		line, err := cl.ReadLine(limit)
		if err != nil {
			m.Error = err.Error()
			if e := srv.Stderr(); e != "" {
				m.Error += " (server stderr: " + e + ")"
			}
			cl.Stop()
			return m
		}
		switch {
		case line == "HELD":
			m.RSSPerConn = (child.RSSBytes(sp) - rss0) / float64(o.held)
			m.SlabPerConn = (child.SlabBytes() - slab0) / float64(o.held)
			m.ServerCPU = child.CPUSeconds(sp) - s0
			m.ClientCPU = child.CPUSeconds(cp) - c0
			// A reading that failed (NaN: a CPU list /proc/stat does
			// not hold) leaves the figure out; JSON has no NaN.
			if v := child.CPUBusySeconds(m.ServerCPUs) - sb0; !math.IsNaN(v) {
				m.ServerCPUsBusy, m.ServerCPUCount = v, child.CountCPUs(m.ServerCPUs)
			}
			if v := child.CPUBusySeconds(m.ClientCPUs) - cb0; !math.IsNaN(v) {
				m.ClientCPUsBusy, m.ClientCPUCount = v, child.CountCPUs(m.ClientCPUs)
			}
			if wb, n, k, y := serverBusy(srv); wb >= 0 && wb0 >= 0 {
				m.WorkerBusy, m.Workers, m.KickTime, m.YieldTime = wb-wb0, n, k-k0, y-y0
			}
			m.ServerCoreUsPerReq, m.CoreMethod = serverCore(c, m, o.placement, int64(o.held))
			cl.Send("release")
		case line == "START":
			s0, c0, rss0, slab0 = child.CPUSeconds(sp), child.CPUSeconds(cp), child.RSSBytes(sp), child.SlabBytes()
			m.ServerCPUs, m.ClientCPUs = child.CPUsAllowed(sp), child.CPUsAllowed(cp)
			srv.Send("reset")
			if m.Workload == "conns" || m.Workload == "rate" {
				sb0, cb0 = child.CPUBusySeconds(m.ServerCPUs), child.CPUBusySeconds(m.ClientCPUs)
			}
			if m.Workload == "conns" || m.Workload == "rate" || throughput(m.Workload) {
				wb0, _, k0, y0 = serverBusy(srv)
			}
		case line == "END":
			m.ServerCPU = child.CPUSeconds(sp) - s0
			m.ClientCPU = child.CPUSeconds(cp) - c0
			if throughput(m.Workload) || m.Workload == "rate" {
				if wb, n, k, y := serverBusy(srv); wb >= 0 && wb0 >= 0 {
					m.WorkerBusy, m.Workers, m.KickTime, m.YieldTime = wb-wb0, n, k-k0, y-y0
				}
			}
			if m.Workload == "rate" {
				if v := child.CPUBusySeconds(m.ServerCPUs) - sb0; !math.IsNaN(v) {
					m.ServerCPUsBusy, m.ServerCPUCount = v, child.CountCPUs(m.ServerCPUs)
				}
				if v := child.CPUBusySeconds(m.ClientCPUs) - cb0; !math.IsNaN(v) {
					m.ClientCPUsBusy, m.ClientCPUCount = v, child.CountCPUs(m.ClientCPUs)
				}
			}
		case strings.HasPrefix(line, "RESULT "):
			var cr clientResult
			if err := json.Unmarshal([]byte(line[len("RESULT "):]), &cr); err != nil {
				m.Error = err.Error()
			}
			cl.Stop()
			m.Count, m.Seconds, m.Bytes, m.RTT, m.CDF, m.ClientBreakdown = cr.Count, cr.Seconds, cr.Bytes, cr.RTT, cr.CDF, cr.Breakdown
			m.ServerXDP, m.ClientXDP = srv.xdpMode, cr.XDPMode
			if c.Proto == "udp" && m.Workload == "bulk" {
				// What the floor received, not what the kernel sent.
				m.SentFrames = m.Count
				if err := serverSink(srv, &m); err != nil {
					m.Error = err.Error()
					return m
				}
			}
			if c.Server == "floor" && c.Proto == "tcp" && throughput(m.Workload) {
				n, err := serverLosses(srv)
				if err != nil {
					m.Error = err.Error()
					return m
				}
				m.FloorLosses = n
			}
			if m.Seconds > 0 {
				if throughput(m.Workload) {
					m.Gbps = float64(m.Bytes) * 8 / m.Seconds / 1e9
					if c.Proto == "udp" {
						m.FramesPerSec = float64(m.Count) / m.Seconds
					}
				} else {
					m.ReqPerSec = float64(m.Count) / m.Seconds
				}
			}
			if m.Count > 0 {
				m.ServerCPUPerM = m.ServerCPU / float64(m.Count) * 1e6
				m.ClientCPUPerM = m.ClientCPU / float64(m.Count) * 1e6
			}
			if m.Workload == "rate" {
				m.ServerCoreUsPerReq, m.CoreMethod = serverCore(c, m, o.placement, m.Count)
			}
			if m.Workload == "pingpong" || m.Workload == "qp-handler" {
				m.Breakdown = serverTrace(srv)
			}
			return m
		}
	}
}

// serverBusy asks a server child for its workers' busy seconds, their
// number, its kicks' seconds and the seconds its workers' Ps ran other
// goroutines: busy -1 for a server other than ustack's, or an answer it
// cannot read (ReadLine stops a child that does not answer in time).
func serverBusy(srv *server) (busy float64, workers int, kicks, yield float64) {
	if err := srv.Send("busy"); err != nil {
		return -1, 0, 0, 0
	}
	line, err := srv.ReadLine(5 * time.Second)
	if err != nil {
		return -1, 0, 0, 0
	}
	if _, err := fmt.Sscanf(line, "BUSY %g %d %g %g", &busy, &workers, &kicks, &yield); err != nil {
		return -1, 0, 0, 0
	}
	return busy, workers, kicks, yield
}

// Capacity methods (result.CoreMethod).
const (
	// coreWorkers: a ustack server's workers' busy time plus the time
	// their Ps ran the application's goroutines, less every kick's time
	// (on veth a copy-mode kick runs the client's receive path).
	coreWorkers = "ustack workers: busy + yielded to goroutines − kicks"
	// coreCPUs: a kernel server's CPUs' busy time from /proc/stat,
	// softirq included. The kernel's sends on veth run the client's
	// receive path on the server's CPU; /proc/stat cannot tell that
	// part apart, so it is included.
	coreCPUs = "server CPUs busy (/proc/stat, softirq and the peer's receive in sends included)"
)

// serverCore returns a server's CPU per request (or per connection, n
// of them) in µs, with the platform's costs apart where they can be told
// apart, and how it was measured: "" where it cannot be.
//
// A ustack server spins, so its process's CPU time is its whole life:
// its work is its workers' busy time and, with one P, the time they
// yielded to the application's goroutines (QueueStats.YieldTime), less
// its kicks. A kernel server's work is its CPUs' busy time, which counts
// only in the two-hosts placement, where no client shares its CPUs. The
// floors spin too and count nothing.
func serverCore(c contender, m result, pl child.Placement, n int64) (float64, string) {
	if n <= 0 {
		return 0, ""
	}
	switch {
	case c.Server == "ustack" && m.Workers > 0:
		if pl.Name() != child.TwoHosts && c.Procs != 1 {
			return 0, "" // goroutines on other Ps than the worker's
		}
		return (m.WorkerBusy + m.YieldTime - m.KickTime) / float64(n) * 1e6, coreWorkers
	case strings.HasPrefix(c.Server, "kernel") && m.ServerCPUsBusy > 0 && pl.Name() == child.TwoHosts:
		return m.ServerCPUsBusy / float64(n) * 1e6, coreCPUs
	}
	return 0, ""
}

// serverSink asks a floor server what its sink received since the reset
// at START: frames, payload bytes, and the time from the first batch to
// the last.
func serverSink(srv *server, m *result) error {
	if err := srv.Send("sink"); err != nil {
		return err
	}
	line, err := srv.ReadLine(5 * time.Second)
	if err != nil {
		return err
	}
	var st reflector.Count
	if rest, ok := strings.CutPrefix(line, "SINK "); !ok || json.Unmarshal([]byte(rest), &st) != nil {
		return fmt.Errorf("floor sink: unexpected %q", line)
	}
	if st.Frames < 2 || st.Seconds <= 0 {
		return fmt.Errorf("floor sink received %d frames", st.Frames)
	}
	m.Count, m.Bytes, m.Seconds = st.Frames, st.Bytes, st.Seconds
	return nil
}

// serverLosses asks a floor server how many losses its TCP sink and
// source saw since the reset at START.
func serverLosses(srv *server) (int64, error) {
	if err := srv.Send("losses"); err != nil {
		return 0, err
	}
	line, err := srv.ReadLine(5 * time.Second)
	if err != nil {
		return 0, err
	}
	var n int64
	if _, err := fmt.Sscanf(line, "LOSSES %d", &n); err != nil {
		return 0, fmt.Errorf("floor losses: unexpected %q", line)
	}
	return n, nil
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
