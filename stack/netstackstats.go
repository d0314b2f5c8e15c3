package stack

import (
	"reflect"
	"sync"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// netstackCounter is one of netstack's counters: its field path in
// tcpip.Stats and the index path reflection reaches it by.
type netstackCounter struct {
	path  []string
	index []int
}

// netstackCounters lists every *tcpip.StatCounter of tcpip.Stats, in
// field order, found once by reflection.
var netstackCounters = sync.OnceValue(func() []netstackCounter {
	var cs []netstackCounter
	var walk func(t reflect.Type, path []string, index []int)
	walk = func(t reflect.Type, path []string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			p := append(append([]string(nil), path...), f.Name)
			ix := append(append([]int(nil), index...), i)
			switch {
			case f.Type == reflect.TypeFor[*tcpip.StatCounter]():
				cs = append(cs, netstackCounter{path: p, index: ix})
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, p, ix)
			}
		}
	}
	walk(reflect.TypeFor[tcpip.Stats](), nil, nil)
	return cs
})

// NetstackCounterPaths returns the field path of each of netstack's own
// counters (gVisor's tcpip.Stats: IP, ARP, ICMP, IGMP, TCP, UDP, NIC
// and the rest), such as [TCP ValidSegmentsReceived], in the order
// NetstackCounters reports them. Counters named Current… (such as
// TCP.CurrentEstablished) are levels; the others only grow. It needs no
// Stack, so that a metrics exporter can describe the counters before it
// reads any.
func NetstackCounterPaths() [][]string {
	cs := netstackCounters()
	paths := make([][]string, len(cs))
	for i, c := range cs {
		paths[i] = append([]string(nil), c.path...)
	}
	return paths
}

// NetstackCounters calls fn with the field path and current value of
// each of netstack's own counters, once each, in the order of
// NetstackCounterPaths. path is shared: fn must neither change it nor
// keep it after returning. Stats copies the few of these counters it
// reports; this is every one of them, for an exporter.
func (s *Stack) NetstackCounters(fn func(path []string, value uint64)) {
	v := reflect.ValueOf(s.ns.Stats()).Elem()
	for _, c := range netstackCounters() {
		var n uint64
		// netstack fills in every counter (tcpip.Stats.FillIn) when the
		// stack is made; a nil one would read as zero.
		if sc, _ := v.FieldByIndex(c.index).Interface().(*tcpip.StatCounter); sc != nil {
			n = sc.Value()
		}
		fn(c.path, n)
	}
}
