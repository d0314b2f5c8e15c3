// Package fastflow is ustack's TCP fast path for an established
// connection in the common case: in order, loss-free, not limited by the
// window, with the timestamp option in Linux's layout or none. It is a
// pure state machine over frame bytes. It imports no netstack and no
// ustack stack code, reads no clock, and keeps no pointers, so tests and
// fuzzers drive it without a NIC at millions of segments a second.
//
// # State
//
// A Flow is one connection's state in 256 bytes, four cache lines grouped
// by what the hot path touches (see Flow). A Slab is one queue's flows and
// send rings, made in chunks as they are needed: a flow holds a ring only
// while it has bytes written and unacknowledged. Neither holds a pointer,
// so the garbage collector does not scan them. Init imports a
// connection's State from the slow path at a quiet point (nothing in
// flight), InitInFlight one with a few segments in flight and their bytes,
// and Export returns it, with the segments in flight, when the slow path
// takes it back.
//
// # Receive
//
// The worker verifies a frame's checksums, finds its flow, and calls
// Receive with the batch's Clock. Receive follows Linux's
// tcp_rcv_established header prediction: the TCP header's word at byte
// 12 (data offset, flags, window) against the predicted one in one
// comparison, then the timestamp option with PAWS, SEQ == RCV.NXT and
// SND.UNA ≤ ACK ≤ SND.NXT. The ACK is processed first: SND.UNA advances,
// which releases the acknowledged bytes of the send ring; the in-flight
// record gives an RTT sample; the peer's window is taken under the
// SND.WL1/WL2 rule. Then the payload comes back as a subslice of the frame
// (Input.Payload), for the handler or queue-pair engine to consume before
// the frame is recycled: no copy. Receive also records that an ACK is
// owed, with a deadline DelayedAck away, or needed now (AckNow) once more
// than one MSS is unacknowledged.
//
// Any other segment returns a Reason and leaves the flow exactly as it
// was: the caller demotes the connection and hands the same segment to
// netstack.
//
// # Transmit
//
// Write appends the application's bytes to the flow's send ring, where
// each byte sits at its sequence number modulo the ring's size: the ring
// holds the written and unacknowledged bytes, the retransmission record
// netstack takes over on demotion. Cut cuts the
// next segment (at most one MSS) from the ring into a caller-supplied
// frame: the Ethernet, IPv4 and TCP header template is copied, lengths,
// sequence and ACK numbers, the window and timestamps are written, and
// the IPv4 and TCP checksums come from the template's precomputed partial
// sums plus the payload summed as it is copied (offload.CopySum). The ACK
// and window ride on every segment, which clears the ACK owed. The send
// check is one comparison against the precomputed allowance,
// min(cwnd, SND.WND) less the bytes in flight. Ack writes a pure ACK for
// an ACK owed that no reply carries.
//
// The fast path never retransmits. A duplicate ACK, SACK, a deadline
// passing (the caller's timer wheel, from the flow's RTO) or a
// window-limited sender all demote to netstack, whose loss recovery then
// works from the exported state and the ring's bytes.
package fastflow
