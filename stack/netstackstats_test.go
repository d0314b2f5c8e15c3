package stack

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestNetstackCounters: NetstackCounters reports every counter of
// NetstackCounterPaths, in that order, with netstack's values.
func TestNetstackCounters(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	ln, err := mp.b.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	paths := NetstackCounterPaths()
	if len(paths) < 100 {
		t.Fatalf("%d netstack counters, want them all (over 100)", len(paths))
	}
	var got []string
	values := map[string]uint64{}
	mp.a.NetstackCounters(func(path []string, v uint64) {
		p := strings.Join(path, ".")
		got = append(got, p)
		values[p] = v
	})
	var want []string
	for _, p := range paths {
		want = append(want, strings.Join(p, "."))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("NetstackCounters reported %d counters not in NetstackCounterPaths' order (%d)", len(got), len(want))
	}
	st := mp.a.ns.Stats()
	for p, n := range map[string]uint64{
		"TCP.ActiveConnectionOpenings": st.TCP.ActiveConnectionOpenings.Value(),
		"TCP.CurrentEstablished":       st.TCP.CurrentEstablished.Value(),
	} {
		if n == 0 || values[p] != n {
			t.Errorf("%s: NetstackCounters reports %d, netstack %d (want equal, not zero)", p, values[p], n)
		}
	}
}
