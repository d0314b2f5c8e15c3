package stack

import (
	"time"

	"github.com/ustack-dev/ustack/xsk"
)

// frameIO is one queue's frame I/O, in the shape of an AF_XDP socket: an
// xsk.Socket on Linux, a memory wire in tests. The RX methods (Receive,
// Recycle, Refill, Data, Wait) are called by the queue's worker only; the
// TX methods (Alloc, Free, Frame, Enqueue, Complete) under the queue's TX
// lock; Kick and Interrupt from anywhere.
type frameIO interface {
	// Receive takes up to len(descs) received frames; the caller owns them
	// until Recycle.
	Receive(descs []xsk.Desc) int
	Recycle(descs []xsk.Desc)
	Refill() int
	// Data returns a received frame's bytes, aliasing the frame.
	Data(d xsk.Desc) []byte

	Alloc() (uint64, bool)
	Free(addr uint64)
	// Frame returns the whole frame at addr for writing.
	Frame(addr uint64) []byte
	Enqueue(descs []xsk.Desc) int
	Complete() int
	Kick() error
	// TxQueued reports frames left on the TX ring that a kick has not
	// yet got the kernel to take (TX side; read racily by the worker to
	// decide whether to kick again).
	TxQueued() int

	// Wait blocks until frames may be ready to receive, Interrupt is
	// called, or timeout passes.
	Wait(timeout time.Duration) error
	Interrupt()
	Close() error
}
