package metrics

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/xsk"
)

const ns = "ustack"

// queueCounter is one per-queue counter of stack.QueueStats.
type queueCounter struct {
	desc *prometheus.Desc
	get  func(*stack.QueueStats) uint64
}

// netstackCounter is one of netstack's counters: its field path in
// tcpip.Stats.
type netstackCounter struct {
	desc  *prometheus.Desc
	index []int
	gauge bool
}

// Collector is a prometheus.Collector over a Stack's counters. Register
// it with a prometheus.Registry (or use Handler); each scrape reads the
// counters once.
type Collector struct {
	s *stack.Stack

	queue    []queueCounter
	xskDescs []*prometheus.Desc // per xsk.Stats field, in field order
	drops    *prometheus.Desc
	faults   *prometheus.Desc
	steering *prometheus.Desc
	netstack []netstackCounter
	owned    *prometheus.Desc
	capture  []*prometheus.Desc
	trace    *prometheus.Desc
	traceN   *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector of s's counters.
func NewCollector(s *stack.Stack) *Collector {
	c := &Collector{s: s}
	q := []string{"queue"}
	for _, qc := range []struct {
		name, help string
		get        func(*stack.QueueStats) uint64
	}{
		{"rx_packets_total", "Frames the queue's worker took off the RX ring.", func(q *stack.QueueStats) uint64 { return q.RxPackets }},
		{"tx_packets_total", "Frames netstack wrote to the queue's TX ring.", func(q *stack.QueueStats) uint64 { return q.TxPackets }},
		{"tx_no_frame_total", "Writes that found no free frame or TX slot.", func(q *stack.QueueStats) uint64 { return q.TxNoFrame }},
		{"tx_oversize_total", "Packets larger than a frame, dropped.", func(q *stack.QueueStats) uint64 { return q.TxOversize }},
		{"rx_partial_checksum_total", "TCP/UDP packets accepted with a partial checksum from a veth peer.", func(q *stack.QueueStats) uint64 { return q.RxPartialChecksum }},
		{"rx_inline_total", "TCP endpoints processed on the worker after an RX batch.", func(q *stack.QueueStats) uint64 { return q.RxInline }},
	} {
		c.queue = append(c.queue, queueCounter{desc: prometheus.NewDesc(ns+"_queue_"+qc.name, qc.help, q, nil), get: qc.get})
	}
	xt := reflect.TypeFor[xsk.Stats]()
	for i := range xt.NumField() {
		f := xt.Field(i)
		c.xskDescs = append(c.xskDescs, prometheus.NewDesc(ns+"_xsk_"+snake(f.Name)+"_total",
			"The AF_XDP socket's "+f.Name+" counter (xsk.Stats).", q, nil))
	}
	c.drops = prometheus.NewDesc(ns+"_rx_dropped_total",
		"Received frames dropped, by reason: runt and bad_checksum in ustack's worker; rx_dropped, rx_invalid, rx_ring_full and fill_ring_empty in the kernel's AF_XDP socket.",
		[]string{"queue", "reason"}, nil)
	c.faults = prometheus.NewDesc(ns+"_faults_total", "Faults injected (Config.Faults), by direction and kind.", []string{"queue", "direction", "fault"}, nil)
	c.steering = prometheus.NewDesc(ns+"_steering_packets_total", "Packets the XDP steering program classified, by verdict reason.", []string{"reason"}, nil)
	c.owned = prometheus.NewDesc(ns+"_owned_ports", "(address, protocol, port) entries steered to ustack.", nil, nil)
	for _, n := range []string{"packets", "bytes", "dropped", "errors"} {
		c.capture = append(c.capture, prometheus.NewDesc(ns+"_capture_"+n+"_total", "Packet capture (Config.Capture) "+n+".", nil, nil))
	}
	c.trace = prometheus.NewDesc(ns+"_trace_stage_seconds", "Latency breakdown (Config.Trace): time from a request's RX batch to each stage, by percentile.", []string{"stage", "quantile"}, nil)
	c.traceN = prometheus.NewDesc(ns+"_trace_stage_requests_total", "Requests the latency breakdown recorded per stage.", []string{"stage"}, nil)
	walkStats(reflect.TypeFor[tcpip.Stats](), nil, nil, func(path []string, index []int) {
		name := path[len(path)-1]
		gauge := strings.HasPrefix(name, "Current")
		full := ns + "_netstack"
		for _, p := range path {
			full += "_" + snake(p)
		}
		if !gauge {
			full += "_total"
		}
		c.netstack = append(c.netstack, netstackCounter{
			desc:  prometheus.NewDesc(full, "netstack's tcpip.Stats."+strings.Join(path, ".")+".", nil, nil),
			index: append([]int(nil), index...),
			gauge: gauge,
		})
	})
	return c
}

var statCounterType = reflect.TypeFor[*tcpip.StatCounter]()

// walkStats calls fn for every *tcpip.StatCounter field in t, with its
// field names and index path.
func walkStats(t reflect.Type, path []string, index []int, fn func(path []string, index []int)) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		p, ix := append(path, f.Name), append(index, i)
		switch {
		case f.Type == statCounterType:
			fn(p, ix)
		case f.Type.Kind() == reflect.Struct:
			walkStats(f.Type, p, ix, fn)
		}
	}
}

// snake turns a Go field name into a metric name part: ValidSegmentsReceived
// → valid_segments_received, ICMP → icmp, V4PacketsSent → v4_packets_sent.
func snake(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, q := range c.queue {
		ch <- q.desc
	}
	for _, d := range c.xskDescs {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{c.drops, c.faults, c.steering, c.owned, c.trace, c.traceN} {
		ch <- d
	}
	for _, d := range c.capture {
		ch <- d
	}
	for _, n := range c.netstack {
		ch <- n.desc
	}
}

// Collect implements prometheus.Collector: one Stats snapshot per scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for i := range st.Queues {
		qs := &st.Queues[i]
		q := strconv.Itoa(qs.Queue)
		for _, qc := range c.queue {
			counter(qc.desc, qc.get(qs), q)
		}
		xv := reflect.ValueOf(qs.XSK)
		for j, d := range c.xskDescs {
			counter(d, xv.Field(j).Uint(), q)
		}
		x := qs.XSK
		for _, r := range []struct {
			reason string
			n      uint64
		}{{"runt", qs.RxRunt}, {"bad_checksum", qs.RxBadChecksum}, {"rx_dropped", x.RxDropped}, {"rx_invalid", x.RxInvalid}, {"rx_ring_full", x.RxRingFull}, {"fill_ring_empty", x.FillRingEmpty}} {
			counter(c.drops, r.n, q, r.reason)
		}
		for _, f := range []struct {
			dir string
			s   stack.FaultStats
		}{{"rx", qs.FaultsRX}, {"tx", qs.FaultsTX}} {
			if f.s == (stack.FaultStats{}) {
				continue
			}
			for _, k := range []struct {
				kind string
				n    uint64
			}{{"drop", f.s.Dropped}, {"corrupt", f.s.Corrupted}, {"duplicate", f.s.Duplicated}, {"reorder", f.s.Reordered}, {"delay", f.s.Delayed}, {"skipped", f.s.Skipped}} {
				counter(c.faults, k.n, q, f.dir, k.kind)
			}
		}
	}
	for r, n := range st.Steering {
		counter(c.steering, n, bpf.Reason(r).String())
	}
	ch <- prometheus.MustNewConstMetric(c.owned, prometheus.GaugeValue, float64(st.OwnedPorts))
	for i, v := range []uint64{st.Capture.Packets, st.Capture.Bytes, st.Capture.Dropped, st.Capture.Errors} {
		counter(c.capture[i], v)
	}
	if t := st.Trace; t != nil {
		for _, s := range t.Stages {
			name := s.Stage.String()
			counter(c.traceN, s.Count, name)
			for _, p := range []struct {
				q string
				v float64
			}{{"0.5", s.P50.Seconds()}, {"0.9", s.P90.Seconds()}, {"0.99", s.P99.Seconds()}} {
				ch <- prometheus.MustNewConstMetric(c.trace, prometheus.GaugeValue, p.v, name, p.q)
			}
		}
	}
	nv := reflect.ValueOf(c.s.Netstack().Stats()).Elem()
	for _, n := range c.netstack {
		sc, _ := nv.FieldByIndex(n.index).Interface().(*tcpip.StatCounter)
		if sc == nil {
			continue
		}
		kind := prometheus.CounterValue
		if n.gauge {
			kind = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(n.desc, kind, float64(sc.Value()))
	}
}

// Handler returns an http.Handler serving s's metrics, with the Go
// runtime's and the process's, in Prometheus's exposition format.
func Handler(s *stack.Stack) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(s), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
