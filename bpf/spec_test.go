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

// TestProgramTakesFrags: the program declares multi-buffer support
// (section xdp.frags), which jumbo MTUs on veth and XDP_USE_SG sockets
// need; Load drops the flag only on kernels that do not know it.
func TestProgramTakesFrags(t *testing.T) {
	spec, err := loadUstack()
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Programs["ustack_xdp"]
	if p == nil {
		t.Fatal("no program ustack_xdp")
	}
	const hasFrags = 0x20 // BPF_F_XDP_HAS_FRAGS
	if p.SectionName != "xdp.frags" || p.Flags&hasFrags == 0 {
		t.Fatalf("section %q, flags %#x: want xdp.frags with BPF_F_XDP_HAS_FRAGS", p.SectionName, p.Flags)
	}
}
