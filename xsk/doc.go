// Package xsk implements AF_XDP sockets over a UMEM of its own, with the
// four rings mapped through package ring.
//
// Frames move between the application and the kernel like this:
//
//	RX: free frames ──Refill──▶ fill ring ──kernel writes packet──▶ RX ring
//	    ──Receive──▶ application reads UMEM[desc] ──Recycle──▶ fill ring
//	TX: Alloc a free frame, write it ──Transmit──▶ TX ring ──kick (sendto)──▶
//	    kernel sends ──▶ completion ring ──Complete──▶ free frames
//
// Every frame of the UMEM is owned by exactly one party at a time: a
// socket's free list, one of its rings (then the kernel), or the
// application between Receive and Recycle or between Alloc and Transmit.
// Each socket takes a fixed share of the UMEM's frames when it opens, so
// sockets on different queues never contend for frames.
//
// A socket's frames are split into an RX pool (fill ring, RX ring, frames
// between Receive and Recycle) and a TX pool (frames between Alloc and
// Transmit, TX ring, completion ring). The RX-side methods (Receive,
// Recycle, Refill, WakeupRx, Wait) may run in one goroutine while the
// TX-side methods (Alloc, Free, Enqueue, Transmit, Complete) run in
// another; each side is single-threaded. Kick, Interrupt and Stats are safe
// anywhere.
// A forwarder that transmits received frames in place drives both sides
// from one goroutine and returns them with CompleteToFill.
//
// A socket opened with Config.MultiBuffer (XDP_USE_SG) receives a packet
// larger than a frame as a chain of descriptors, each but the last with
// OptContd, and sends one the same way; UMEM.Span gives adjacent frames
// as one slice to write such a packet in place, and TxRoom says whether
// the TX ring takes a whole chain.
package xsk
