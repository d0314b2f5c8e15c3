package buffer

import (
	"bytes"
	"testing"
)

// dirty returns a chunk of size's pool to it holding 0xff in every byte,
// so that the next chunk taken from that pool is a dirty one.
func dirty(size int) {
	c := newChunk(size)
	for i := range c.data {
		c.data[i] = 0xff
	}
	c.init = len(c.data)
	c.DecRef()
}

func zero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// TestChunkNotClearedYetNeverLeaks checks patch 0093: a pooled chunk is
// not cleared when taken, but no view shows a byte nobody wrote.
func TestChunkNotClearedYetNeverLeaks(t *testing.T) {
	const size = 1000 // the 1,024-byte pool
	t.Run("NewViewSize", func(t *testing.T) {
		dirty(size)
		v := NewViewSize(size)
		defer v.Release()
		if !zero(v.AsSlice()) {
			t.Fatalf("NewViewSize shows old bytes: % x", v.AsSlice()[:16])
		}
	})
	t.Run("Grow after Write", func(t *testing.T) {
		dirty(size)
		v := NewView(size)
		defer v.Release()
		v.Write([]byte{1, 2, 3})
		v.Grow(5)
		if got, want := v.AsSlice(), []byte{1, 2, 3, 0, 0, 0, 0, 0}; !bytes.Equal(got, want) {
			t.Fatalf("got % x, want % x", got, want)
		}
	})
	t.Run("GrowTo without zeroing", func(t *testing.T) {
		dirty(1) // the 64-byte pool, twice: both views come from it
		dirty(1)
		var b Buffer
		defer b.Release()
		b.Append(NewViewWithData([]byte{7}))
		b.GrowTo(100, false)
		if got := b.Flatten(); got[0] != 7 || !zero(got[1:]) {
			t.Fatalf("GrowTo shows old bytes: % x", got[:16])
		}
	})
	t.Run("shared chunk", func(t *testing.T) {
		dirty(size)
		v := NewView(size)
		defer v.Release()
		v.Write([]byte{1, 2, 3, 4})
		w := v.Clone()
		defer w.Release()
		w.CapLength(2)
		w.Grow(4) // bytes 2 and 3 were written: they show again, as before
		if got, want := w.AsSlice(), []byte{1, 2, 3, 4, 0, 0}; !bytes.Equal(got, want) {
			t.Fatalf("clone grew to % x, want % x", got, want)
		}
		if got, want := v.AsSlice(), []byte{1, 2, 3, 4}; !bytes.Equal(got, want) {
			t.Fatalf("growing a clone changed the original: % x", got)
		}
		if w.chunk == v.chunk {
			t.Fatal("a clone growing past what was written did not copy the chunk")
		}
	})
	t.Run("Clone keeps what was written", func(t *testing.T) {
		dirty(size)
		v := NewView(size)
		defer v.Release()
		v.Write([]byte{9, 8, 7})
		c := v.chunk.Clone()
		defer c.DecRef()
		if c.init != 3 || !bytes.Equal(c.data[:3], []byte{9, 8, 7}) {
			t.Fatalf("clone holds % x with init %d", c.data[:3], c.init)
		}
	})
	t.Run("ReadFrom then Grow", func(t *testing.T) {
		dirty(size)
		v := NewView(size)
		defer v.Release()
		v.ReadFrom(bytes.NewReader([]byte{5, 6}))
		v.Grow(2)
		if got, want := v.AsSlice(), []byte{5, 6, 0, 0}; !bytes.Equal(got, want) {
			t.Fatalf("got % x, want % x", got, want)
		}
	})
}
