package fastflow

import (
	"errors"
	"testing"
)

func TestSlab(t *testing.T) {
	for _, c := range []SlabConfig{{0, 4096}, {1, 4095}, {1, 2048}, {1, 3 << 12}} {
		if _, err := NewSlab(c); err == nil {
			t.Errorf("NewSlab(%+v) accepted", c)
		}
	}
	s, err := NewSlab(SlabConfig{Flows: 3, RingSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]bool{}
	for i := 0; i < 3; i++ {
		id, err := s.Alloc()
		if err != nil || seen[id] || id >= 3 {
			t.Fatalf("alloc %d: id %d, %v", i, id, err)
		}
		seen[id] = true
		r := s.Ring(id)
		if len(r) != 4096 || cap(r) != 4096 {
			t.Fatalf("ring %d: len %d cap %d", id, len(r), cap(r))
		}
		r[0], r[4095] = byte(id+1), byte(id+1)
	}
	if _, err := s.Alloc(); !errors.Is(err, ErrSlabFull) {
		t.Fatalf("fourth alloc: %v", err)
	}
	for id := range seen {
		if r := s.Ring(id); r[0] != byte(id+1) || r[4095] != byte(id+1) {
			t.Errorf("ring %d overlaps another", id)
		}
	}
	sa, _ := states(1, 2)
	if err := s.Flow(1).Init(&sa); err != nil {
		t.Fatal(err)
	}
	s.Free(1)
	if s.Len() != 2 || *s.Flow(1) != (Flow{}) {
		t.Errorf("after Free: %d in use, flow not cleared", s.Len())
	}
	if id, err := s.Alloc(); err != nil || id != 1 {
		t.Errorf("realloc: %d, %v", id, err)
	}
}

// TestInitRefuses covers the states Init refuses (ErrState).
func TestInitRefuses(t *testing.T) {
	for name, mod := range map[string]func(*State){
		"in flight":         func(s *State) { s.SndNxt++ },
		"MSS 0":             func(s *State) { s.MSS = 0 },
		"scale 15":          func(s *State) { s.RcvShift = 15 },
		"zero window":       func(s *State) { s.SndWnd = 0 },
		"edge behind":       func(s *State) { s.RcvEdge = s.RcvNxt - 1 },
		"ACK ahead":         func(s *State) { s.LastAckSent = s.RcvNxt + 1 },
		"space over scale":  func(s *State) { s.RcvSpace = 0x10000 << s.RcvShift },
		"window over scale": func(s *State) { s.SndWnd = 0x10000 << s.SndShift },
	} {
		st, _ := states(1, 2)
		mod(&st)
		var f Flow
		if err := f.Init(&st); !errors.Is(err, ErrState) {
			t.Errorf("%s: %v", name, err)
		}
	}
	st, _ := states(1, 2)
	var f Flow
	if err := f.Init(&st); err != nil {
		t.Fatal(err)
	}
	got := f.Export()
	if got.SndUna != st.SndUna || got.RcvEdge != st.RcvEdge || got.SrcIP != st.SrcIP || got.DstMAC != st.DstMAC ||
		got.DstPort != st.DstPort || !got.TS || got.TSRecent != st.TSRecent || got.RTO != initialRTO {
		t.Errorf("export %+v of %+v", got, st)
	}
}
