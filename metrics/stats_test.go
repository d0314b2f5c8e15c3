package metrics

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ustack-dev/ustack/stack"
)

// TestEveryCounterHasMetric walks stack.Stats and stack.QueueStats and
// fails for any field the tables do not export with a help text, or
// explicitly leave out with a reason, and for table entries no field
// matches any more.
func TestEveryCounterHasMetric(t *testing.T) {
	for _, tc := range []table{queueTable, statsTable} {
		seen := map[string]bool{}
		for _, f := range leaves(tc.typ) {
			seen[f.path] = true
			e, ok := tc.exports[f.path]
			if !ok {
				e, _ := tc.exportOf(f.path)
				t.Errorf("stack.%s.%s has no metric of its own: add it to %s (metrics/stats.go) with a help text that says what it counts (until then it is exported as ustack_%s with no help)",
					tc.typ.Name(), f.path, tc.name, e.series[0].fam.name)
				continue
			}
			set := 0
			for _, b := range []bool{len(e.series) > 0, e.netstack != "", e.custom != "", e.none != ""} {
				if b {
					set++
				}
			}
			if set != 1 {
				t.Errorf("%s[%q]: %d of series, netstack, custom and none set, want exactly one", tc.name, f.path, set)
			}
			kind := tc.typ.FieldByIndex(f.index).Type.Kind()
			for _, s := range e.series {
				if strings.TrimSpace(s.fam.help) == "" || strings.Contains(s.fam.help, "no help text") {
					t.Errorf("%s[%q]: metric ustack_%s has no help text", tc.name, f.path, s.fam.name)
				}
				if len(s.labels) != len(s.fam.labels) {
					t.Errorf("%s[%q]: %d label values for ustack_%s's labels %v", tc.name, f.path, len(s.labels), s.fam.name, s.fam.labels)
				}
				switch kind {
				case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
					reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
				default:
					t.Errorf("%s[%q]: a %v cannot be exported as one series; export it with custom code", tc.name, f.path, kind)
				}
			}
			if e.netstack != "" && !isNetstackCounter(e.netstack) {
				t.Errorf("%s[%q]: tcpip.Stats.%s is no *tcpip.StatCounter", tc.name, f.path, e.netstack)
			}
		}
		for path := range tc.exports {
			if !seen[path] {
				t.Errorf("%s[%q]: stack.%s has no such field", tc.name, path, tc.typ.Name())
			}
		}
	}
}

// isNetstackCounter reports whether path names a counter in tcpip.Stats
// (stack.NetstackCounterPaths), which the Collector exports as
// ustack_netstack_….
func isNetstackCounter(path string) bool {
	for _, p := range stack.NetstackCounterPaths() {
		if strings.Join(p, ".") == path {
			return true
		}
	}
	return false
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// describedNames returns the names of the metric families c describes.
func describedNames(c *Collector) map[string]bool {
	ch := make(chan *prometheus.Desc, 4096)
	c.Describe(ch)
	close(ch)
	names := map[string]bool{}
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names[m[1]] = true
		}
	}
	return names
}

// TestMetricNamesStable: the names exported before the tables existed
// stay, and the counters they missed (TxFrames, RxCoalesced) are there.
func TestMetricNamesStable(t *testing.T) {
	names := describedNames(NewCollector(nil))
	want := []string{
		"queue_rx_packets_total", "queue_tx_packets_total", "queue_tx_no_frame_total", "queue_tx_oversize_total",
		"queue_rx_partial_checksum_total", "queue_rx_inline_total",
		"queue_tx_frames_total", "queue_rx_coalesced_total",
		"xsk_rx_dropped_total", "xsk_rx_invalid_total", "xsk_tx_invalid_total", "xsk_rx_ring_full_total",
		"xsk_fill_ring_empty_total", "xsk_tx_ring_empty_total", "xsk_rx_packets_total", "xsk_rx_bytes_total",
		"xsk_tx_packets_total", "xsk_tx_bytes_total", "xsk_kicks_total", "xsk_kick_retries_total",
		"xsk_fill_starved_total", "xsk_tx_ring_full_total",
		"rx_dropped_total", "faults_total", "steering_packets_total", "owned_ports",
		"capture_packets_total", "capture_bytes_total", "capture_dropped_total", "capture_errors_total",
		"trace_stage_seconds", "trace_stage_requests_total",
		"netstack_tcp_valid_segments_received_total", "netstack_tcp_current_established",
	}
	for _, n := range want {
		if !names[ns+"_"+n] {
			t.Errorf("ustack_%s is not described", n)
		}
	}
}
