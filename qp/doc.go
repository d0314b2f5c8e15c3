// Package qp is ustack's queue-pair layer: RDMA verbs — registered
// memory, reliable-connected queue pairs, completion queues — over any
// reliable byte stream, speaking iWARP on the wire so that a ustack queue
// pair and a kernel-TCP one interoperate, and Wireshark decodes them.
//
// # Verbs
//
// A Device holds the registration table. A PD (protection domain) owns
// memory regions (RegMR) and queue pairs; a queue pair reaches, locally
// or remotely, only regions of its own domain, and a peer only what a
// region's Access rights grant, within its bounds. An MR's Key is its
// local key and the remote key (STag) given to peers; remote offsets are
// zero-based. Dereg waits for accesses in flight and fences new ones.
//
// A QP is created in Reset, moved to Init with Modify, and to RTS by
// Connect (initiator) or ConnRequest.Accept (responder), which run MPA
// connection setup over a net.Conn: kernel TCP, or a connection from
// ustack's stack.Stack. PostSend and PostRecv copy work requests into
// fixed-depth queues and fail synchronously on bad input; completions go
// to the CQs named in QPConfig, drained by CQ.Poll (never blocks, never
// allocates) or awaited with CQ.Wait.
//
// # How data moves
//
// PostSend encodes requests as FPDUs straight from registered memory
// into a per-queue-pair transmit buffer and writes it to the connection
// on the caller's goroutine; Sends and Writes complete once written (as
// in iWARP, a Write's completion means the data left this end). Reads and
// atomics complete when their responses arrive.
//
// The receive side, the engine's input, reassembles FPDUs across any
// read boundary, checks CRC32c and headers, places payload directly into
// registered memory and writes completions. Over a ustack connection it
// runs on the stack's worker, right after the TCP processing that
// brought the bytes, with no goroutine hand-off (QP.Polled reports it);
// over any other net.Conn, or with QPConfig.ReaderGoroutine, a
// per-queue-pair reader goroutine feeds it. Responses to the peer's
// Reads and atomics go out from there when the connection takes them at
// once; a per-queue-pair transmit goroutine sends the rest, requests
// held back by a fence or the ORD limit, and the Terminate.
// QPConfig.OnInput runs an application's handler in the same place,
// after each batch of input.
//
// Applications that poll memory for a peer's Writes, as RDMA programs do,
// can block on QP.Placed between checks, and CQ pollers on CQ.Notify:
// on a small machine, spinning takes the CPU the engine's goroutines need.
//
// # Errors
//
// Anything the peer gets wrong — a bad CRC or length, an unknown opcode,
// an access violation (bad key, bounds, rights, another domain, an
// invalidated or deregistered region), a Send with no receive posted —
// is answered with a Terminate naming it (RFC 5040 §4.8) and the
// connection ends. The end that receives a Terminate completes the Read
// or atomic it concerned with StatusRemoteAccess (or StatusRemoteOp);
// either end moves to StateError and flushes every outstanding request,
// in order, with StatusFlush. QP.Err says why.
//
// # Wire format
//
// MPA (RFC 5044) revision 1, markers off, CRC32c on; FPDUs of at most
// QPConfig.MaxFPDU bytes; DDP (RFC 5041) tagged and untagged segments;
// RDMAP (RFC 5040) Write, Read Request/Response, Send (with Invalidate,
// Solicited Event), Terminate; RFC 7306 Atomic Request/Response on
// untagged queues 3 and 4, and Immediate Data (opcode 8, untagged queue
// 0), which carries an RDMA Write with immediate's 32-bit value in its
// first 4 bytes and consumes a receive.
//
// Not done: markers, CRC off, MPA revision 2 (enhanced RTR, IRD/ORD
// negotiation: both ends must be configured with compatible ORD and
// IRD), Terminates that copy the offending headers, the responder waiting
// for the initiator's first FPDU (see Connect), memory windows and fast
// registration, unreliable queue pairs.
package qp

// Where the engine lives: tx.go frames posted requests out (pumpLocked,
// encode), rx.go takes the stream in and places it (input, handle),
// respond.go answers the peer's Reads and atomics, transport.go attaches
// the connection (start, the reader and transmit goroutines, the
// worker's callbacks, non-blocking writes). verbs.go holds the device,
// domains, memory regions and CQs, qp.go the QP and its work requests,
// conn.go connection setup, wire.go the formats.
