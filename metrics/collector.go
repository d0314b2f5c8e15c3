package metrics

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/stack"
)

const ns = "ustack"

// statSeries is one series of a Stats field: the field's index and the
// metric it feeds, with its label values.
type statSeries struct {
	index  []int
	desc   *prometheus.Desc
	labels []string
	gauge  bool
	// ifSet: exported only when the struct holding the field (index
	// without its last element) is not all zero.
	ifSet bool
}

// netstackCounter is the metric of one of netstack's counters, in the
// order of stack.NetstackCounterPaths.
type netstackCounter struct {
	desc  *prometheus.Desc
	gauge bool
}

// Collector is a prometheus.Collector over a Stack's counters. Register
// it with a prometheus.Registry (or use Handler); each scrape reads the
// counters once.
type Collector struct {
	s *stack.Stack

	queue                        []statSeries // stack.QueueStats, labelled by queue
	stats                        []statSeries // stack.Stats' own counters
	steering, demotions, refused *prometheus.Desc
	netstack                     []netstackCounter
	trace                        *prometheus.Desc
	traceN                       *prometheus.Desc
	descs                        []*prometheus.Desc // every family, once, for Describe
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector of s's counters: every counter of
// stack.Stats and stack.QueueStats (by reflection, with the metric and
// help text statsExports and queueExports give it) and every counter of
// netstack's tcpip.Stats.
func NewCollector(s *stack.Stack) *Collector {
	c := &Collector{s: s}
	descs := map[*family]*prometheus.Desc{}
	desc := func(f *family, perQueue bool) *prometheus.Desc {
		if d, ok := descs[f]; ok {
			return d
		}
		var labels []string
		if perQueue {
			labels = append(labels, "queue")
		}
		d := prometheus.NewDesc(ns+"_"+f.name, f.help, append(labels, f.labels...), nil)
		descs[f] = d
		c.descs = append(c.descs, d)
		return d
	}
	add := func(dst *[]statSeries, tb table) {
		for _, f := range leaves(tb.typ) {
			e, _ := tb.exportOf(f.path)
			if e.custom != "" {
				continue
			}
			for _, sr := range e.series {
				*dst = append(*dst, statSeries{index: f.index, desc: desc(sr.fam, tb.perQueue), labels: sr.labels, gauge: sr.fam.gauge, ifSet: sr.ifSet})
			}
		}
	}
	add(&c.queue, queueTable)
	add(&c.stats, statsTable)
	c.steering = desc(famSteering, false)
	c.demotions = desc(famDemotions, false)
	c.refused = desc(famRefused, false)
	c.trace = prometheus.NewDesc(ns+"_trace_stage_seconds", "Latency breakdown (Config.Trace): time from a request's RX batch to each stage, by percentile.", []string{"stage", "quantile"}, nil)
	c.traceN = prometheus.NewDesc(ns+"_trace_stage_requests_total", "Requests the latency breakdown recorded per stage.", []string{"stage"}, nil)
	c.descs = append(c.descs, c.trace, c.traceN)
	for _, path := range stack.NetstackCounterPaths() {
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
			gauge: gauge,
		})
	}
	for _, n := range c.netstack {
		c.descs = append(c.descs, n.desc)
	}
	return c
}

// durationType is a time.Duration field's type: emitted in seconds.
var durationType = reflect.TypeFor[time.Duration]()

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
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one Stats snapshot per scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	for i := range st.Queues {
		qs := &st.Queues[i]
		q := strconv.Itoa(qs.Queue)
		emit(ch, reflect.ValueOf(qs).Elem(), c.queue, q)
	}
	emit(ch, reflect.ValueOf(&st).Elem(), c.stats)
	for r, n := range st.Steering {
		ch <- prometheus.MustNewConstMetric(c.steering, prometheus.CounterValue, float64(n), bpf.Reason(r).String())
	}
	for r, n := range st.FastPath.Owned.DemotionsBy {
		ch <- prometheus.MustNewConstMetric(c.demotions, prometheus.CounterValue, float64(n), r)
	}
	for r, n := range st.FastPath.Owned.PromoteRefusedBy {
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(n), r)
	}
	if t := st.Trace; t != nil {
		for _, s := range t.Stages {
			name := s.Stage.String()
			ch <- prometheus.MustNewConstMetric(c.traceN, prometheus.CounterValue, float64(s.Count), name)
			for _, p := range []struct {
				q string
				v float64
			}{{"0.5", s.P50.Seconds()}, {"0.9", s.P90.Seconds()}, {"0.99", s.P99.Seconds()}} {
				ch <- prometheus.MustNewConstMetric(c.trace, prometheus.GaugeValue, p.v, name, p.q)
			}
		}
	}
	i := 0
	c.s.NetstackCounters(func(_ []string, v uint64) {
		if i == len(c.netstack) {
			return
		}
		n := &c.netstack[i]
		i++
		kind := prometheus.CounterValue
		if n.gauge {
			kind = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(n.desc, kind, float64(v))
	})
}

// emit sends the series of v, a Stats or QueueStats, each with the
// labels first (the queue) and then its own.
func emit(ch chan<- prometheus.Metric, v reflect.Value, ss []statSeries, first ...string) {
	for _, sr := range ss {
		if sr.ifSet && v.FieldByIndex(sr.index[:len(sr.index)-1]).IsZero() {
			continue
		}
		f := v.FieldByIndex(sr.index)
		var x float64
		switch {
		case f.CanUint():
			x = float64(f.Uint())
		case f.Type() == durationType:
			x = time.Duration(f.Int()).Seconds() // Prometheus's base unit
		case f.CanInt():
			x = float64(f.Int())
		case f.CanFloat():
			x = f.Float()
		default:
			continue // not a number: TestEveryCounterHasMetric names it
		}
		kind := prometheus.CounterValue
		if sr.gauge {
			kind = prometheus.GaugeValue
		}
		labels := append(append(make([]string, 0, len(first)+len(sr.labels)), first...), sr.labels...)
		ch <- prometheus.MustNewConstMetric(sr.desc, kind, x, labels...)
	}
}

// Handler returns an http.Handler serving s's metrics, with the Go
// runtime's and the process's, in Prometheus's exposition format.
func Handler(s *stack.Stack) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(s), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
