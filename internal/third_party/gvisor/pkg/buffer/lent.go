package buffer

import "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/sync"

// Lender is told when memory it lent to views is read no more.
type Lender interface {
	// Release is called once, on the goroutine that released the last
	// view of the lent memory.
	Release()
}

// noLender stands in for a nil Lender.
type noLender struct{}

func (noLender) Release() {}

// lentPool holds chunks for lent memory: a chunk's data is the lender's.
var lentPool = sync.Pool{New: func() any { return new(chunk) }}

// NewLentView returns a view of data that does not copy it. The view, and
// every clone and part of it, reads data in place; once the last of them
// is released, l.Release is called. No view writes to data: a write
// copies the chunk first, as for a shared one. The caller must not change
// data before Release.
func NewLentView(data []byte, l Lender) *View {
	if l == nil {
		// The lender marks the chunk lent: never written, never pooled.
		l = noLender{}
	}
	c := lentPool.Get().(*chunk)
	c.data, c.init, c.lent = data, len(data), l
	c.InitRefs()
	v := viewPool.Get().(*View)
	*v = View{chunk: c, write: len(data)}
	return v
}

// destroyLent returns a lent chunk to its pool and its memory to the
// lender.
func (c *chunk) destroyLent() {
	l := c.lent
	c.data, c.lent = nil, nil
	lentPool.Put(c)
	l.Release()
}
