package fastflow

// Reason says why the fast path declined a segment or a send. The zero
// value, OK, means it did not: every other value hands the connection to
// the slow path (netstack), which then processes the same segment or
// call. A Reason is also the label of the demotion counter.
type Reason uint8

const (
	OK Reason = iota

	// Receive: the segment itself.

	Malformed     // not Ethernet/IPv4 without options/TCP, or lengths that disagree
	ControlFlags  // SYN, FIN, RST or URG set, or ACK clear
	ECN           // ECE or CWR set: netstack has no ECN
	OptionsChange // a TCP header of another length or layout than the flow's
	SACK          // a SACK option: the peer reports a hole
	PAWS          // TSval older than TS.Recent (RFC 7323 §5)
	OutOfOrder    // SEG.SEQ after RCV.NXT: a hole before it
	OldData       // SEG.SEQ before RCV.NXT: a retransmission (D-SACK is netstack's)
	BeyondWindow  // payload past the advertised right edge
	AckUnsent     // SEG.ACK after SND.NXT: acknowledges what was never sent (RFC 5961 §5.2)
	AckOld        // SEG.ACK before SND.UNA
	DupAck        // a pure duplicate ACK with data outstanding (RFC 5681 §2)
	ZeroWindow    // the peer's window is zero: persist is netstack's
	ShrunkWindow  // the peer's right edge moved left (RFC 9293 §3.8.6.2.1)

	// Transmit.

	WindowLimited // bytes wait for the window or cwnd: a bulk sender
	InflightFull  // more segments in flight than the record holds
	RingFull      // the send ring has no room for the write
	FrameTooSmall // the frame cannot hold the headers and one byte

	numReasons
)

var reasonNames = [numReasons]string{
	OK:            "ok",
	Malformed:     "malformed",
	ControlFlags:  "control-flags",
	ECN:           "ecn",
	OptionsChange: "options-change",
	SACK:          "sack",
	PAWS:          "paws",
	OutOfOrder:    "out-of-order",
	OldData:       "old-data",
	BeyondWindow:  "beyond-window",
	AckUnsent:     "ack-unsent",
	AckOld:        "ack-old",
	DupAck:        "dup-ack",
	ZeroWindow:    "zero-window",
	ShrunkWindow:  "shrunk-window",
	WindowLimited: "window-limited",
	InflightFull:  "inflight-full",
	RingFull:      "ring-full",
	FrameTooSmall: "frame-too-small",
}

// String returns the reason's metric label, e.g. "dup-ack".
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// NumReasons is the number of Reason values, OK included: the length of
// a per-reason counter array.
const NumReasons = int(numReasons)
