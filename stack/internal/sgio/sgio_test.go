package sgio

import (
	"bytes"
	"testing"

	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/stack/internal/memwire"
	"github.com/ustack-dev/ustack/xsk"
)

const (
	frameSize = 2048
	maxFrame  = 5000 // three frames
	frames    = 64
)

// pair is a layer over one end of a memory wire and the raw other end.
func pair(t *testing.T) (*IO, *memwire.End) {
	t.Helper()
	a, b, err := memwire.New(frames, frameSize)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(a, frameSize, maxFrame)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

// pattern returns n bytes that differ from frame to frame.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*13)
	}
	return b
}

// sendChain has the raw end send frame as a chain of parts of at most
// frameSize bytes, the parts listed in keep (nil: all).
func sendChain(t *testing.T, w *memwire.End, frame []byte, keep []int) {
	t.Helper()
	if !w.EnqueueChain(frame, keep) {
		t.Fatal("the wire has no room for the chain")
	}
	w.Kick()
}

// receive takes what the layer hands up, copies the frames, and recycles.
func receive(s *IO) [][]byte {
	descs := make([]xsk.Desc, 16)
	n := s.Receive(descs)
	var out [][]byte
	for _, d := range descs[:n] {
		out = append(out, append([]byte(nil), s.Data(d)...))
	}
	s.Recycle(descs[:n])
	return out
}

// TestChainsJoined: frames of one, two and three frames arrive as one
// descriptor each with the frame's bytes; the chains' frames go back to
// the sender, and the layer counts the chains.
func TestChainsJoined(t *testing.T) {
	s, w := pair(t)
	want := [][]byte{pattern(100, 1), pattern(frameSize+10, 2), pattern(maxFrame, 3), pattern(frameSize, 4)}
	for _, f := range want {
		sendChain(t, w, f, nil)
	}
	got := receive(s)
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d: %d bytes differ from the %d sent", i, len(got[i]), len(want[i]))
		}
	}
	var st frameio.Stats
	s.ReadStats(&st)
	if st.SG.RxChains != 2 || st.SG.RxChainsDropped != 0 {
		t.Errorf("stats %+v, want 2 chains joined, none dropped", st.SG)
	}
	if n := w.IdleFrames(); n != frames {
		t.Errorf("the sender has %d of its %d frames back", n, frames)
	}
}

// TestChainAcrossReceives: a chain whose last part arrives after the
// first Receive is joined by the next.
func TestChainAcrossReceives(t *testing.T) {
	s, w := pair(t)
	f := pattern(maxFrame, 9)
	// The first two parts, then the rest.
	var descs []xsk.Desc
	for i := 0; i < 3; i++ {
		addr, _ := w.Alloc()
		part := f[i*frameSize : min(len(f), (i+1)*frameSize)]
		copy(w.Frame(addr), part)
		d := xsk.Desc{Addr: addr, Len: uint32(len(part))}
		if i < 2 {
			d.Options = xsk.OptContd
		}
		descs = append(descs, d)
	}
	w.Enqueue(descs[:2])
	w.Kick()
	if got := receive(s); len(got) != 0 {
		t.Fatalf("half a chain gave %d frames", len(got))
	}
	w.Enqueue(descs[2:])
	w.Kick()
	got := receive(s)
	if len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Fatalf("got %d frames; want the whole chain", len(got))
	}
}

// TestChainTooLong: a chain longer than the largest frame is dropped
// whole and counted, and the frame after it arrives; a chain that lost
// its middle part arrives short (the stack's checks drop it).
func TestChainTooLong(t *testing.T) {
	s, w := pair(t)
	sendChain(t, w, pattern(maxFrame+1, 5), nil)
	sendChain(t, w, pattern(maxFrame, 6), []int{0, 2})
	after := pattern(300, 7)
	sendChain(t, w, after, nil)
	got := receive(s)
	if len(got) != 2 || len(got[0]) != maxFrame-frameSize || !bytes.Equal(got[1], after) {
		t.Fatalf("got %d frames (want 2: the short chain, then the one after)", len(got))
	}
	var st frameio.Stats
	s.ReadStats(&st)
	if st.SG.RxChainsDropped != 1 {
		t.Errorf("stats %+v, want one chain dropped", st.SG)
	}
	if n := w.IdleFrames(); n != frames {
		t.Errorf("the sender has %d of its %d frames back", n, frames)
	}
}

// TestTransmitChains: a frame written into a unit goes out as the chain
// of its frames, whole; a unit comes back once its whole chain has; when
// the ring has room for only part of a chain, none of it goes.
func TestTransmitChains(t *testing.T) {
	s, w := pair(t)
	units := len(s.units)
	if units != frames/3 {
		t.Fatalf("%d units of 3 frames from %d frames", units, frames)
	}
	addr, ok := s.Alloc()
	if !ok {
		t.Fatal("no unit")
	}
	f := s.Frame(addr)
	if len(f) != 3*frameSize {
		t.Fatalf("a unit spans %d bytes, want %d", len(f), 3*frameSize)
	}
	want := pattern(maxFrame, 8)
	copy(f, want)
	small, _ := s.Alloc()
	copy(s.Frame(small), "small")
	if n := s.Enqueue([]xsk.Desc{{Addr: addr, Len: maxFrame}, {Addr: small, Len: 5}}); n != 2 {
		t.Fatalf("Enqueue took %d of 2", n)
	}
	s.Kick()
	descs := make([]xsk.Desc, 16)
	n := w.Receive(descs)
	if n != 4 {
		t.Fatalf("the peer received %d descriptors, want 3 + 1", n)
	}
	var joined []byte
	for i, d := range descs[:3] {
		if (d.Options&xsk.OptContd != 0) != (i < 2) {
			t.Errorf("part %d: options %#x", i, d.Options)
		}
		joined = append(joined, w.Data(d)...)
	}
	if !bytes.Equal(joined, want) || string(w.Data(descs[3])) != "small" {
		t.Fatal("the chain does not join to the frame written")
	}
	if len(s.units) != units-2 {
		t.Fatalf("%d units free, want %d", len(s.units), units-2)
	}
	w.Recycle(descs[:2]) // two parts of the chain back: not yet free
	s.Complete()
	if len(s.units) != units-2 {
		t.Fatalf("a unit came back before its whole chain: %d free", len(s.units))
	}
	w.Recycle(descs[2:4])
	s.Complete()
	if len(s.units) != units {
		t.Fatalf("%d units free after every frame came back, want %d", len(s.units), units)
	}

	// Fill the ring but for two slots: a three-frame chain must wait.
	var filler []xsk.Desc
	for i := 0; i < frames-2; i++ {
		filler = append(filler, xsk.Desc{Addr: uint64(i%frames) * frameSize, Len: 1})
	}
	var room int
	if room = s.lowerIO.TxRoom(frames); room < 3 {
		t.Fatalf("room %d", room)
	}
	s.IO.Enqueue(filler[:room-2])
	a2, _ := s.Alloc()
	if n := s.Enqueue([]xsk.Desc{{Addr: a2, Len: maxFrame}}); n != 0 {
		t.Fatalf("a 3-frame chain went on a ring with room for 2 (took %d)", n)
	}
}
