package stack

import (
	"bytes"
	"testing"
)

// discardHandler takes what arrives and writes nothing: every ACK it is
// owed leaves as a pure ACK.
type discardHandler struct{}

func (discardHandler) OnOpen(*Stream)            {}
func (discardHandler) OnTraffic(*Stream, []byte) {}
func (discardHandler) OnClose(*Stream, error)    {}

// TestScriptOwnedPureAcks: on the owned fast path, data no reply carries
// an ACK for is acknowledged by a pure ACK: after the delayed-ACK time for
// a segment alone, at the batch's end once more than one MSS is
// unacknowledged, and then once for the whole batch however many of its
// segments made it owed (RFC 9293 §3.8.6.3; Linux's quick-ACK rule).
func TestScriptOwnedPureAcks(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true})
	connectHandler(t, p, discardHandler{})
	// The first segment is netstack's; the owned path takes the
	// connection after it.
	seq := uint32(1)
	p.Send(seg{Flags: "PA", Seq: seq, Ack: 1, Payload: []byte("first")})
	seq += 5
	p.Expect(seg{Flags: "A", Seq: 1, Ack: seq})
	waitFor(t, "promotion", func() bool { return p.s.Stats().FastPath.Owned.Flows == 1 })
	before := p.s.Stats().FastPath.Owned

	// Alone, small: one ACK, after the delayed-ACK time.
	p.Send(seg{Flags: "PA", Seq: seq, Ack: 1, Payload: []byte("second")})
	seq += 6
	p.Expect(seg{Flags: "A", Seq: 1, Ack: seq})

	// A batch of four full segments: one ACK for all of it.
	mss := int(p.stackSyn.MSS) - 12 // the timestamps option's
	var batch []seg
	for range 4 {
		batch = append(batch, seg{Flags: "A", Seq: seq, Ack: 1, Payload: bytes.Repeat([]byte{'x'}, mss)})
		seq += uint32(mss)
	}
	p.SendBatch(batch...)
	p.Expect(seg{Flags: "A", Seq: 1, Ack: seq})
	p.ExpectNothing(20e6)

	after := p.s.Stats().FastPath.Owned
	if got := after.PureAcks - before.PureAcks; got != 2 {
		t.Errorf("the owned fast path sent %d pure ACKs, want 2", got)
	}
	if after.Demotions != before.Demotions || after.SegmentsIn-before.SegmentsIn != 5 {
		t.Errorf("the owned fast path did not carry the five segments: %+v → %+v", before, after)
	}
}
