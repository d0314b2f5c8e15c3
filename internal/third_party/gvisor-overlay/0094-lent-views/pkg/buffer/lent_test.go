package buffer

import (
	"bytes"
	"testing"
)

type countLender struct{ n int }

func (l *countLender) Release() { l.n++ }

// TestLentView checks patch 0094: a lent view's memory is read in place,
// never written, and given back once, when its last view goes.
func TestLentView(t *testing.T) {
	data := []byte("lent bytes, read in place")
	orig := append([]byte(nil), data...)
	l := &countLender{}
	v := NewLentView(data, l)
	var b Buffer
	w := v.Clone()
	w.TrimFront(5)
	b.Append(w)
	b.Append(NewViewWithData([]byte("!"))) // not written into the lent chunk
	v.Write([]byte("?"))                   // copies first
	if !bytes.Equal(data, orig) {
		t.Fatalf("a write changed lent memory: %q", data)
	}
	if got := string(b.Flatten()); got != "bytes, read in place!" {
		t.Fatalf("buffer holds %q", got)
	}
	data[0] = 'L' // read in place: the buffer's view sees the lender's change
	if &b.data.Front().AsSlice()[0] != &data[5] {
		t.Fatal("the buffer's view does not read the lent memory in place")
	}
	v.Release()
	if l.n != 0 {
		t.Fatal("released while a buffer still holds a view")
	}
	b.Release()
	if l.n != 1 {
		t.Fatalf("released %d times, want once", l.n)
	}
}
