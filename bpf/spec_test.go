package bpf

import "testing"

// TestMapSizesMatchGo checks the compiled program's map sizes against the
// Go constants that mirror them (MAX_QUEUES against MaxQueues, R_MAX
// against the number of Reasons), from the embedded object, with no
// privileges. The reasons' order is checked in the kernel by
// TestPrivilegedRunMatchesReference.
func TestMapSizesMatchGo(t *testing.T) {
	spec, err := loadUstack()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint32{
		"xsks":     MaxQueues,
		"counters": uint32(numReasons),
	} {
		m, ok := spec.Maps[name]
		if !ok {
			t.Errorf("no map %s", name)
			continue
		}
		if m.MaxEntries != want {
			t.Errorf("map %s has %d entries, Go expects %d", name, m.MaxEntries, want)
		}
	}
}
