package stack

import (
	"net"
	"sync"

	"github.com/ustack-dev/ustack/capability"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/trace"
)

// Lender is capability.Lender: told, through Release, when netstack is
// done with the memory a lent write (LendWriter) queued.
type Lender = capability.Lender

// LendWriter is capability.LendWriter, which ustack's TCP connections
// implement with WriteLent and TryWriteLent: writes whose bytes netstack
// reads in place until they are acknowledged.
type LendWriter = capability.LendWriter

var _ LendWriter = (*tcpConn)(nil)

// lentReader is the netstack Payloader of a lent write: its bytes are
// taken as views of the lent chunk (tcp.ViewPayloader), never copied.
type lentReader struct {
	v   *buffer.View // the write's own reference to the lent chunk
	off int          // bytes already taken
}

var _ tcp.ViewPayloader = (*lentReader)(nil)

var lentReaders = sync.Pool{New: func() any { return new(lentReader) }}

// Len implements tcpip.Payloader.
func (r *lentReader) Len() int { return r.v.Size() - r.off }

// Read implements io.Reader: a copy, for a Payloader user that does not
// take views (none of ustack's TCP writes).
func (r *lentReader) Read(b []byte) (int, error) {
	n := copy(b, r.v.AsSlice()[r.off:])
	r.off += n
	return n, nil
}

// TakeViews implements tcp.ViewPayloader.
func (r *lentReader) TakeViews(n int) buffer.Buffer {
	v := r.v.Clone()
	v.TrimFront(r.off)
	v.CapLength(n)
	r.off += n
	return buffer.MakeWithView(v)
}

// lend starts a lent write of b.
func lend(b []byte, l Lender) *lentReader {
	r := lentReaders.Get().(*lentReader)
	r.v, r.off = buffer.NewLentView(b, l), 0
	return r
}

// done ends a lent write: the lender's memory goes back once netstack's
// views of it are released too (now, if it took none).
func (r *lentReader) done() {
	r.v.Release()
	r.v = nil
	lentReaders.Put(r)
}

// lentWriteOptions: nothing is copied, so netstack need not unlock to
// copy (writeOptions).
var lentWriteOptions = tcpip.WriteOptions{Atomic: true}

// WriteLent implements LendWriter: Write without the copy. It returns
// once all of b is queued, or with how much was when it fails; l.Release
// is called once either way, when netstack is done with what it queued
// (what the owned fast path takes is copied into its send ring, so if
// it takes all, as the call returns).
func (c *tcpConn) WriteLent(b []byte, l Lender) (int, error) {
	r := lend(b, l)
	defer r.done()
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.closed.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	if t := c.s.ep.Trace(); t != nil {
		t.Mark(trace.StageWrite)
	}
	expired := c.wDeadline.channel()
	for r.Len() > 0 {
		c.ownMu.Lock()
		if r.off += c.ownedWrite(b[r.off:]); r.Len() == 0 {
			c.ownMu.Unlock()
			break
		}
		_, err := c.ep.Write(r, lentWriteOptions)
		c.ownMu.Unlock()
		if err != nil {
			if werr := c.writeWait(err, expired); werr != nil {
				return r.off, werr
			}
			if expired == nil {
				expired = c.wDeadline.channel()
			}
		}
	}
	return r.off, nil
}

// TryWriteLent implements LendWriter: TryWrite without the copy. l.Release
// is called once, when netstack is done with what it queued (before
// TryWriteLent returns, if that is nothing).
func (c *tcpConn) TryWriteLent(b []byte, l Lender) (int, error) {
	r := lend(b, l)
	defer r.done()
	if !c.writeMu.TryLock() {
		return 0, nil
	}
	defer c.writeMu.Unlock()
	if c.closed.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	if t := c.s.ep.Trace(); t != nil {
		t.Mark(trace.StageWrite)
	}
	c.ownMu.Lock()
	if r.off += c.ownedWrite(b); r.Len() == 0 {
		c.ownMu.Unlock()
		return r.off, nil
	}
	_, err := c.ep.Write(r, lentWriteOptions)
	c.ownMu.Unlock()
	switch err.(type) {
	case nil, *tcpip.ErrWouldBlock:
		return r.off, nil
	}
	return r.off, c.writeError(err)
}
