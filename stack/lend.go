package stack

import (
	"net"
	"sync"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/trace"
)

// Lender is told when memory lent to a connection's send queue
// (LendWriter) is read no more: its Release is called once for each
// write that lent memory, when netstack is done with the bytes that
// write queued (they were acknowledged, or the connection is gone), on
// the goroutine that let go of them, usually the worker with the
// connection locked: it must not block or use the connection. (An alias,
// so that a package can name the same method set without importing
// this one.)
type Lender = interface{ Release() }

// LendWriter is implemented by ustack's TCP net.Conn values: WriteLent
// and TryWriteLent are Write and TryWrite (TryWriter) without the copy
// into the send buffer. netstack reads the queued bytes of b in place,
// for each segment's frame and any retransmission, until they are
// acknowledged; then l.Release is called. Until then b must not change.
// Package qp's engine lends its transmit buffer this way, so a byte is
// copied once on its way from registered memory to the TX ring besides
// the copy into the frame.
type LendWriter interface {
	WriteLent(b []byte, l Lender) (int, error)
	TryWriteLent(b []byte, l Lender) (int, error)
}

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
// is called once either way, when netstack is done with what it queued.
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
		_, err := c.ep.Write(r, lentWriteOptions)
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
	_, err := c.ep.Write(r, lentWriteOptions)
	switch err.(type) {
	case nil, *tcpip.ErrWouldBlock:
		return r.off, nil
	}
	return r.off, c.writeError(err)
}
