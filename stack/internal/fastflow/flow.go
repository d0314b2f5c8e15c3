package fastflow

// Flow is one connection's fast-path state: everything the worker reads
// or writes to receive an in-order segment and to send one, in 256 bytes
// and no pointers, so a slab of them is never scanned by the garbage
// collector and takes no write barriers.
//
// The fields are grouped into four 64-byte lines by what touches them:
//
//   - line 0, receive and ACK: read and written by every Receive, read by
//     every Cut (the ACK and window that ride on a segment);
//   - line 1, transmit, RTT and timers: written by every Cut and by a
//     Receive that acknowledges data;
//   - line 2, the header template: read by every Cut, written only by
//     Init;
//   - line 3, the record of segments in flight: one entry appended per
//     Cut with payload, popped by the Receive that acknowledges it.
//
// Sequence numbers are uint32 and compared in serial arithmetic (RFC
// 1982), so every field survives wraparound. Times are the batch's Clock:
// microseconds (RTT, timers) and the timestamp clock's milliseconds
// (TSval), both uint32 and compared by difference.
//
// A Flow is owned by one worker. Nothing in it is synchronised.
type Flow struct {
	// Line 0: receive and ACK.

	rcvNxt       uint32 // RCV.NXT: the next byte expected
	rcvEdge      uint32 // the highest right edge advertised (RCV.NXT + RCV.WND); never moves left
	rcvSpace     uint32 // bytes the consumer takes beyond rcvNxt: the window to advertise
	tsRecent     uint32 // TS.Recent (RFC 7323 §4.3)
	lastAckSent  uint32 // Last.ACK.sent: the ACK number of the last segment sent
	sndUna       uint32 // SND.UNA: the oldest unacknowledged byte
	sndNxt       uint32 // SND.NXT: the next byte to send
	sndWnd       uint32 // SND.WND in bytes (scaled)
	sndWL1       uint32 // SND.WL1: SEG.SEQ of the segment that last set sndWnd
	sndWL2       uint32 // SND.WL2: SEG.ACK of that segment
	rcvdSinceAck uint32 // payload bytes received since the last ACK sent
	delackAt     uint32 // microseconds: when an owed ACK is due (valid with flagAckOwed)
	predFlags    uint32 // Linux's pred_flags: TCP header bytes 12–15 expected, PSH and reserved bits masked
	lastRecv     uint32 // microseconds: the last segment received
	mss          uint16 // the peer's MSS: the largest payload to send
	sndShift     uint8  // the peer's window scale
	rcvShift     uint8  // our window scale
	flags        uint8  // flag* bits
	_            [3]byte

	// Line 1: transmit, RTT and timers.

	sndEnd   uint32 // the end of the bytes written to the send ring
	room     uint32 // bytes sendable now beyond sndNxt: min(cwnd, sndWnd) − in flight
	cwnd     uint32 // the congestion window in bytes, set by the slow path; read-only here
	srtt     uint32 // smoothed RTT, microseconds (RFC 6298)
	rttvar   uint32 // RTT variation, microseconds
	rto      uint32 // retransmission timeout, microseconds
	tsOffset uint32 // added to the Clock's milliseconds to make TSval
	lossAt   uint32 // microseconds: the retransmission deadline while data is in flight
	segsIn   uint32 // segments received on the fast path
	segsOut  uint32 // segments sent on the fast path
	bytesIn  uint32 // payload bytes received on the fast path
	bytesOut uint32 // payload bytes sent on the fast path (first transmissions only)
	ipID     uint16 // the next IPv4 identification
	fltHead  uint8  // the oldest entry of inflight
	fltLen   uint8  // entries in use in inflight
	probeAt  uint32 // microseconds: the tail loss probe's deadline while data is in flight (flagProbe)
	_        [8]byte

	// Line 2: the header template.

	hdr    [tmplLen]byte // Ethernet, IPv4 and the TCP header's first 20 bytes; variable fields zero
	ipSum  uint16        // folded sum of hdr's IPv4 header with its variable fields zero
	tcpSum uint16        // folded sum of the pseudo-header's addresses and protocol and the ports
	_      [6]byte

	// Line 3: segments in flight, oldest at fltHead.

	inflight [maxInflight]sent
}

// sent records one segment in flight: where it ends and when it left.
type sent struct {
	end uint32 // sequence number just past the segment
	at  uint32 // microseconds: the Clock of the Cut that sent it
}

const (
	// maxInflight bounds the in-flight record. A flow with more segments
	// outstanding is not request/response shaped: Cut refuses with
	// InflightFull and the flow belongs to netstack.
	maxInflight = 8

	ethLen   = 14
	ipLen    = 20
	tcpLen   = 20
	tsOptLen = 12
	tmplLen  = ethLen + ipLen + tcpLen // 54

	// HeaderLen is the length of the headers Cut writes before the
	// payload: Ethernet, IPv4 without options, TCP with the timestamp
	// option in the layout Linux sends (NOP, NOP, TS).
	HeaderLen = tmplLen + tsOptLen
)

// Flow.flags bits.
const (
	flagTS      = 1 << iota // timestamps are on (NOP NOP TS in every segment)
	flagAckOwed             // data arrived that no segment sent has acknowledged
	flagAckNow              // more than one MSS is unacknowledged: ACK without delay
	flagProbe               // the slow path arms tail loss probes (State.Probe)
)

// tsWord is the first word of the timestamp option as Linux lays it out:
// NOP, NOP, kind 8, length 10 (RFC 7323 Appendix A).
const tsWord = 0x0101080a

// TCP flag bits, in the header's byte 13.
const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagRST = 0x04
	flagPSH = 0x08
	flagACK = 0x10
	flagURG = 0x20
	flagECE = 0x40
	flagCWR = 0x80
)

// Clock is the time of one worker batch, read once and passed to every
// Receive and Cut of the batch: no call here reads a clock.
type Clock struct {
	Us uint32 // microseconds, any epoch: RTT samples and deadlines
	Ms uint32 // the timestamp clock's milliseconds (TSval before the flow's offset)
}

// ClockAt returns the Clock of a monotonic time in nanoseconds.
func ClockAt(nanos int64) Clock {
	return Clock{Us: uint32(nanos / 1e3), Ms: uint32(nanos / 1e6)}
}
