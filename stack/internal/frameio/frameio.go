package frameio

import (
	"time"

	"github.com/ustack-dev/ustack/xsk"
)

// IO is one queue's frame I/O. The RX methods (Receive, RxBacklog,
// Recycle, Refill, Data, Wait) are called by the queue's worker only; the TX methods
// (Alloc, Free, Frame, Enqueue, Complete) by one goroutine at a time,
// under the queue's TX lock; Kick, TxQueued, Interrupt and ReadStats from
// any goroutine; Close once, after the worker has stopped.
type IO interface {
	// Receive takes up to len(descs) received frames; the caller owns
	// them until Recycle.
	Receive(descs []xsk.Desc) int
	// RxBacklog reports how many received frames wait to be taken: the
	// worker's measure of how far behind it is.
	RxBacklog() int
	// Recycle gives received frames back.
	Recycle(descs []xsk.Desc)
	// Refill tops up the frames the kernel may receive into.
	Refill() int
	// Data returns a received frame's bytes, aliasing the frame.
	Data(d xsk.Desc) []byte

	// Alloc takes a free frame for sending; the caller owns it until
	// Enqueue accepts it or Free returns it.
	Alloc() (uint64, bool)
	Free(addr uint64)
	// Frame returns the whole frame at addr for writing.
	Frame(addr uint64) []byte
	// Enqueue puts frames on the TX ring and returns how many it took
	// (a prefix of descs); the caller keeps the rest.
	Enqueue(descs []xsk.Desc) int
	// Complete reaps frames the kernel has sent, for Alloc.
	Complete() int
	// Kick asks the kernel to send what is on the TX ring.
	Kick() error
	// TxQueued reports frames on the TX ring that a kick has not yet
	// got the kernel to take (read racily by the worker to decide
	// whether to kick again).
	TxQueued() int

	// Wait blocks until frames may be ready to receive, Interrupt is
	// called, or timeout passes.
	Wait(timeout time.Duration) error
	Interrupt()

	// ReadStats adds this layer's counters to st and those of the
	// layers below it.
	ReadStats(st *Stats)
	// Close gives back what this layer holds (frames, buffers) and
	// closes the layers below it.
	Close() error
}

// Stats are the counters of one queue's frame I/O chain, each filled in
// by the layer that keeps it (zero when that layer is not in the chain).
type Stats struct {
	// XSK is the AF_XDP socket's.
	XSK xsk.Stats
	// FaultsRX and FaultsTX are the fault injector's, per direction.
	FaultsRX, FaultsTX FaultStats
	// Capture is the packet capture's (one capture serves every queue
	// of a stack, so every queue reports the same).
	Capture CaptureStats // SG is the multi-buffer layer's (sgio).
	SG      SGStats
}

// SGStats count the multi-buffer layer's chains: frames received as a
// chain of frames and joined, chains dropped (longer than the largest
// frame, or no reassembly buffer free), and frames sent as chains.
type SGStats struct {
	RxChains, RxChainsDropped, TxChains uint64
}

// FaultStats count the faults applied in one direction.
type FaultStats struct {
	Dropped, Corrupted, Duplicated, Reordered, Delayed uint64
	// Skipped counts faults drawn but not applied for want of a spare
	// frame (a duplicate, or a held RX frame's copy).
	Skipped uint64
}

// CaptureStats count a capture's records.
type CaptureStats struct {
	// Packets and Bytes are the records written and their size in the
	// file (record headers included).
	Packets, Bytes uint64
	// Dropped counts frames not recorded because of the size bound;
	// Errors, frames not recorded because the writer returned an error
	// (after the first error the capture stops).
	Dropped, Errors uint64
}
