package child

import (
	"math"
	"os"
	"reflect"
	"testing"
	"time"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{{"1", []int{1}}, {"0-1", []int{0, 1}}, {"0,2-3\n", []int{0, 2, 3}}} {
		got, ok := parseCPUList(c.in)
		want := map[int]bool{}
		for _, n := range c.want {
			want[n] = true
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", c.in, got, ok, want)
		}
		if n := CountCPUs(c.in); n != len(c.want) {
			t.Errorf("CountCPUs(%q) = %d, want %d", c.in, n, len(c.want))
		}
	}
	for _, bad := range []string{"", "x", "3-1", "1-", "-1"} {
		if _, ok := parseCPUList(bad); ok {
			t.Errorf("parseCPUList(%q) accepted", bad)
		}
	}
}

// TestCPUBusySeconds: this process's CPUs count the time it spins on
// them, and a list naming a CPU the machine lacks is NaN.
func TestCPUBusySeconds(t *testing.T) {
	mine := CPUsAllowed(os.Getpid())
	before := CPUBusySeconds(mine)
	if math.IsNaN(before) {
		t.Fatalf("CPUBusySeconds(%q) is NaN", mine)
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	if d := CPUBusySeconds(mine) - before; d < 0.1 {
		t.Errorf("300 ms of spinning on CPUs %s counted %.2f s busy", mine, d)
	}
	if v := CPUBusySeconds("4096"); !math.IsNaN(v) {
		t.Errorf("CPU 4096: %v, want NaN", v)
	}
}

// TestProcFields: this process's RSS, the machine's slab and this
// process's CPU list read as /proc gives them.
func TestProcFields(t *testing.T) {
	if v := RSSBytes(os.Getpid()); v < 1<<20 {
		t.Errorf("RSS %v bytes, want a running Go test's megabytes", v)
	}
	if v := SlabBytes(); v < 1<<20 {
		t.Errorf("slab %v bytes, want a kernel's megabytes", v)
	}
	if CountCPUs(CPUsAllowed(os.Getpid())) < 1 {
		t.Errorf("CPU list %q", CPUsAllowed(os.Getpid()))
	}
}
