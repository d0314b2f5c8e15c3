package stack

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/seqnum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
)

// Tests of netstack's side of the hand-over of an established connection
// to a fast path outside it (tcp.Endpoint's HandOut and TakeBack): a
// scripted peer plays the remote TCP, and the test plays the fast path,
// which takes the state at a quiet point and gives it back, as it was or
// moved on. Delayed ACKs are off, so that what ustack sends does not
// depend on a timer's race with the script.

// handOverOptions is the peer of the hand-over tests: timestamps and
// window scaling, so that the TS clock and the scaled windows cross the
// hand-over.
func handOverOptions() scriptOptions {
	return scriptOptions{Timestamps: true, WScale: 2, Config: func(c *Config) { c.DelayedAck = -1 }}
}

// handOverPeer connects a scripted peer to a new listener and returns
// ustack's connection and its endpoint.
func handOverPeer(t *testing.T, o scriptOptions) (*scriptPeer, net.Conn, *tcp.Endpoint) {
	t.Helper()
	p := newScriptPeer(t, o)
	c := p.Connect()
	return p, c, c.(*tcpConn).ep
}

// exchange plays one request and reply from the peer's side: the peer
// sends req at its seq (relative), ustack acknowledges it, the application
// reads it and writes reply, which the peer expects at ustack's seq.
func (p *scriptPeer) exchange(c net.Conn, seq, ack uint32, req, reply []byte) {
	p.t.Helper()
	p.Send(seg{Flags: "PA", Seq: seq, Ack: ack, Payload: req})
	p.Expect(seg{Flags: "A", Seq: ack, Ack: seq + uint32(len(req))})
	if got := readUpTo(p.t, c, len(req)); !bytes.Equal(got, req) {
		p.t.Fatalf("the application read %q, want %q", got, req)
	}
	if _, err := c.Write(reply); err != nil {
		p.t.Fatal(err)
	}
	p.Expect(seg{Flags: "PA", Seq: ack, Ack: seq + uint32(len(req)), Payload: reply})
}

// handOutOK hands ep out and fails the test unless it is handed out with
// want bytes in flight.
func handOutOK(t *testing.T, ep *tcp.Endpoint, maxSegs int, want []byte) tcp.HandOver {
	t.Helper()
	h, got, miss := ep.HandOut(nil, maxSegs)
	if miss != tcp.HandOutOK {
		t.Fatalf("HandOut refused: %v", miss)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("HandOut gave %d bytes in flight %q, want %q", len(got), got, want)
	}
	if !ep.Parked() {
		t.Fatal("HandOut succeeded and the endpoint is not parked")
	}
	return h
}

// handOverMSS returns ep's largest payload, as HandOut reports it, from
// a hand-out and take-back at a quiet point.
func handOverMSS(t *testing.T, ep *tcp.Endpoint) int {
	t.Helper()
	h := handOutOK(t, ep, 8, nil)
	if err := ep.TakeBack(&h, nil, nil); err != nil {
		t.Fatal(err)
	}
	return int(h.MSS)
}

// recorded runs a scripted connection and returns every segment ustack
// sent on it: its IPv4 header and TCP segment in hex, with what is a
// clock, a counter or a random draw apart from TCP's state zeroed (see
// maskedSegment), under the segment as the script reads it.
func recorded(t *testing.T, play func(p *scriptPeer, c net.Conn, ep *tcp.Endpoint)) []string {
	t.Helper()
	p, c, ep := handOverPeer(t, handOverOptions())
	var sent []string
	p.frame = func(frame []byte) {
		if s, ok := p.parse(frame); ok {
			s.TSval = 0
			sent = append(sent, s.String()+"\n    "+maskedSegment(t, frame, p.irs))
		}
	}
	play(p, c, ep)
	return sent
}

// maskedSegment returns an IPv4 frame's IP header and TCP segment in hex
// with the IP ID, both checksums and the TSval zeroed, and the sequence
// number relative to irs (ustack's ISN, which each connection draws).
func maskedSegment(t *testing.T, frame []byte, irs seqnum.Value) string {
	t.Helper()
	ip := header.IPv4(append([]byte(nil), frame[header.EthernetMinimumSize:]...))
	ip.SetID(0)
	ip.SetChecksum(0)
	tcph := header.TCP(ip[ip.HeaderLength():])
	tcph.SetChecksum(0)
	tcph.SetSequenceNumber(tcph.SequenceNumber() - uint32(irs))
	opts := tcph[header.TCPMinimumSize:tcph.DataOffset()]
	for i := 0; i < len(opts); {
		switch k := opts[i]; {
		case k == header.TCPOptionEOL:
			i = len(opts)
		case k == header.TCPOptionNOP:
			i++
		case i+1 >= len(opts) || opts[i+1] < 2:
			t.Fatalf("malformed TCP options % x", opts)
		default:
			if k == header.TCPOptionTS {
				clear(opts[i+2 : i+6])
			}
			i += int(opts[i+1])
		}
	}
	return hex.EncodeToString(ip)
}

// TestHandOverRoundTrip: a connection handed out at a quiet point and
// taken back at once with the state HandOut gave sends exactly the
// segments (every IP and TCP header field but the IP ID, the checksums
// and TSval, and the payloads) that the same
// script draws from a connection never handed out, through more requests,
// a lost reply retransmitted, and the close: with nothing in flight, and
// with the reply in flight.
func TestHandOverRoundTrip(t *testing.T) {
	for _, inFlight := range []bool{false, true} {
		t.Run(fmt.Sprintf("inflight=%v", inFlight), func(t *testing.T) {
			play := func(handOver bool) func(p *scriptPeer, c net.Conn, ep *tcp.Endpoint) {
				return func(p *scriptPeer, c net.Conn, ep *tcp.Endpoint) {
					p.exchange(c, 1, 1, []byte("request 1"), []byte("reply 1"))
					if !inFlight {
						p.Send(seg{Flags: "A", Seq: 10, Ack: 8})
						p.ExpectNothing(20 * time.Millisecond)
					}
					if handOver {
						var want []byte
						if inFlight {
							want = []byte("reply 1")
						}
						h := handOutOK(t, ep, 8, want)
						if err := ep.TakeBack(&h, want, nil); err != nil {
							t.Fatal(err)
						}
						if ep.Parked() {
							t.Fatal("parked after TakeBack")
						}
					}
					if inFlight {
						p.Send(seg{Flags: "A", Seq: 10, Ack: 8})
					}
					p.exchange(c, 10, 8, []byte("request 2"), []byte("reply 2"))
					p.Send(seg{Flags: "A", Seq: 19, Ack: 15})
					// The next reply is lost: the peer waits for it
					// again.
					p.exchange(c, 19, 15, []byte("request 3"), []byte("reply 3"))
					p.awaitResend(15, "the lost reply")
					p.Send(seg{Flags: "A", Seq: 28, Ack: 22})
					p.Send(seg{Flags: "FA", Seq: 28, Ack: 22})
					p.Expect(seg{Flags: "A", Seq: 22, Ack: 29})
					c.Close()
					p.Expect(seg{Flags: "FA", Seq: 22, Ack: 29})
					p.Send(seg{Flags: "A", Seq: 29, Ack: 23})
					p.ExpectNothing(20 * time.Millisecond)
				}
			}
			without := recorded(t, play(false))
			with := recorded(t, play(true))
			if a, b := strings.Join(with, "\n  "), strings.Join(without, "\n  "); a != b {
				t.Errorf("ustack's segments differ\nhanded over:\n  %s\nnot:\n  %s", a, b)
			}
		})
	}
}

// TestHandOverInFlightRetransmit: segments in flight at HandOut are
// netstack's again after TakeBack: one the peer never acknowledges is
// sent again, with its bytes, and the connection goes on; with SACK (a
// tail loss probe may come first) and without (the retransmission
// timeout, from the segment's send time).
func TestHandOverInFlightRetransmit(t *testing.T) {
	for _, sack := range []bool{true, false} {
		for _, segs := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("sack=%v/segs=%d", sack, segs), func(t *testing.T) {
				o := handOverOptions()
				o.NoSACK = !sack
				p, c, ep := handOverPeer(t, o)
				mss := handOverMSS(t, ep)
				data := diffPayload(0, uint32(mss*(segs-1)+100))
				starts, _ := p.writeFlight(c, data)
				if len(starts) != segs {
					t.Fatalf("the write went in %d segments, want %d", len(starts), segs)
				}
				if segs > 1 {
					if _, _, miss := ep.HandOut(nil, segs-1); miss != tcp.HandOutInFlight {
						t.Fatalf("HandOut of %d segments with room for %d: %v, want %v", segs, segs-1, miss, tcp.HandOutInFlight)
					}
				}
				h := handOutOK(t, ep, segs, data)
				if len(h.InFlight) != segs {
					t.Fatalf("HandOut reported %d segments in flight, want %d", len(h.InFlight), segs)
				}
				if got := h.InFlight[segs-1].End - h.SndUna; int(got) != len(data) {
					t.Fatalf("the segments in flight end %d bytes past SND.UNA, want %d", got, len(data))
				}
				if err := ep.TakeBack(&h, data, nil); err != nil {
					t.Fatal(err)
				}
				// The peer has all but the last segment, which it
				// never received.
				last := starts[segs-1]
				if segs > 1 {
					p.Send(seg{Flags: "A", Seq: 1, Ack: last})
				}
				for {
					s, ok := p.next(scriptWait)
					if !ok {
						t.Fatal("ustack did not send the lost segment again")
					}
					if s.Seq == last && len(s.Payload) > 0 {
						if want := data[last-1:]; !bytes.Equal(s.Payload, want) {
							t.Fatalf("the retransmission carries %q, want %q", s.Payload, want)
						}
						break
					}
				}
				p.Send(seg{Flags: "A", Seq: 1, Ack: 1 + uint32(len(data))})
				p.exchange(c, 1, 1+uint32(len(data)), []byte("more"), []byte("and more"))
			})
		}
	}
	// All lost: the first goes again on the retransmission timeout, as
	// it went the first time (a full segment cut from a larger send
	// without PSH).
	for _, segs := range []int{1, 3} {
		t.Run(fmt.Sprintf("all lost/segs=%d", segs), func(t *testing.T) {
			o := handOverOptions()
			o.NoSACK = true
			p, c, ep := handOverPeer(t, o)
			mss := handOverMSS(t, ep)
			data := diffPayload(0, uint32(mss*(segs-1)+100))
			var first seg
			if _, err := c.Write(data); err != nil {
				t.Fatal(err)
			}
			for got := 0; got < len(data); {
				s := p.Expect(seg{Flags: "A", Seq: 1 + uint32(got), Ack: 1, Payload: data[got:min(got+mss, len(data))]}.withFlags(got+mss >= len(data)))
				if got == 0 {
					first = s
				}
				got += len(s.Payload)
			}
			h := handOutOK(t, ep, segs, data)
			if err := ep.TakeBack(&h, data, nil); err != nil {
				t.Fatal(err)
			}
			p.Expect(seg{Flags: first.Flags, Seq: 1, Ack: 1, Payload: first.Payload})
		})
	}
}

// withFlags returns s with flags PA if psh, else A.
func (s seg) withFlags(psh bool) seg {
	s.Flags = "A"
	if psh {
		s.Flags = "PA"
	}
	return s
}

// TestHandOverAdvanced: TakeBack with the state a fast path reached after
// exchanging requests and replies of its own: netstack goes on from its
// numbers: the unsent bytes go at SND.NXT with RCV.NXT acknowledged, the
// advertised window's right edge where the fast path left it or further,
// TS.Recent echoed and TSval continuing the clock HandOut gave; and it
// accepts the peer's next segment and the ACK of what it sent.
func TestHandOverAdvanced(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("ipv6=%v", v6), func(t *testing.T) { testHandOverAdvanced(t, v6) })
	}
}

func testHandOverAdvanced(t *testing.T, v6 bool) {
	o := handOverOptions()
	o.IPv6 = v6
	p, c, ep := handOverPeer(t, o)
	// The TTL (hop limit) and TOS (traffic class) of ustack's frames,
	// the latter set to something other than the default.
	opt := tcpip.IPv4TOSOption
	if v6 {
		opt = tcpip.IPv6TrafficClassOption
	}
	if err := ep.SetSockOptInt(opt, 0x28); err != nil {
		t.Fatal(err)
	}
	var ttl, tos uint8
	p.frame = func(frame []byte) {
		if ip := frame[header.EthernetMinimumSize:]; v6 {
			ttl, tos = header.IPv6(ip).HopLimit(), ip[0]<<4|ip[1]>>4
		} else {
			ttl, tos = header.IPv4(ip).TTL(), ip[1]
		}
	}
	p.exchange(c, 1, 1, []byte("request 1"), []byte("reply 1"))
	p.Send(seg{Flags: "A", Seq: 10, Ack: 8})
	p.ExpectNothing(20 * time.Millisecond)
	h := handOutOK(t, ep, 8, nil)
	if h.TTL != ttl || h.TOS != tos || tos != 0x28 {
		t.Errorf("HandOut gave TTL %d TOS %#x, ustack's frames carry %d and %#x", h.TTL, h.TOS, ttl, tos)
	}
	edge := h.RcvEdge

	// The fast path's work: five requests of 100 bytes received, five
	// replies of 50 sent, the last in flight, 30 bytes written and
	// unsent; every reply acknowledged all it had received; the peer's
	// TSval went up by one a segment (as the scripted peer's clock).
	const n, reqLen, repLen = 5, 100, 50
	h.RcvNxt += n * reqLen
	h.LastAckSent = h.RcvNxt
	if e := h.RcvNxt + h.RcvSpace; seqnum.Value(h.RcvEdge).LessThan(seqnum.Value(e)) {
		h.RcvEdge = e
	}
	p.tsClock += n
	h.TSRecent = 1000 + p.tsClock
	h.SndUna += (n - 1) * repLen
	h.SndNxt = h.SndUna + repLen
	h.SndWL1, h.SndWL2 = h.RcvNxt-reqLen, h.SndUna
	sent := h.Now.Add(2 * time.Millisecond)
	h.InFlight = []tcp.HandOverSeg{{End: h.SndNxt, At: sent}}
	h.LastSend = sent
	inflight := bytes.Repeat([]byte{'r'}, repLen)
	unsent := []byte("thirty bytes, never yet sent.")
	time.Sleep(5 * time.Millisecond)
	if err := ep.TakeBack(&h, inflight, unsent); err != nil {
		t.Fatal(err)
	}

	rcvNxt := h.RcvNxt - uint32(peerISN)
	sndNxt := h.SndNxt - uint32(p.irs)
	s := p.Expect(seg{Flags: "PA", Seq: sndNxt, Ack: rcvNxt, Payload: unsent})
	if !s.TS || s.TSecr != h.TSRecent {
		t.Errorf("the segment echoes TSecr %d (option %v), want TS.Recent %d", s.TSecr, s.TS, h.TSRecent)
	}
	// TSval: the hand-out's plus the milliseconds since (1 ms ticks),
	// with some slack for a slow machine.
	if d := s.TSval - h.TSVal; int32(d) < 5 || d > 2000 {
		t.Errorf("TSval %d is %d past the hand-out's %d, want 5 ms or more (and not seconds)", s.TSval, int32(d), h.TSVal)
	}
	if right := rcvNxt + uint32(s.Win)<<h.RcvShift; int32(right-(edge-uint32(peerISN))) < 0 {
		t.Errorf("the window advertised ends at %d, left of the edge %d advertised before", right, edge-uint32(peerISN))
	}

	// The peer acknowledges all of it and sends its next request.
	end := sndNxt + uint32(len(unsent))
	p.Send(seg{Flags: "PA", Seq: rcvNxt, Ack: end, Payload: []byte("request 7")})
	p.Expect(seg{Flags: "A", Seq: end, Ack: rcvNxt + 9})
	if got := readUpTo(t, c, 9); string(got) != "request 7" {
		t.Fatalf("the application read %q", got)
	}
	fs := ep.FastState()
	if fs.SndUna != p.irs.Add(seqnum.Size(end)) || fs.SndNxt != fs.SndUna || fs.Outstanding != 0 {
		t.Errorf("after the peer's ACK of everything: SND.UNA %d SND.NXT %d outstanding %d, want %d, %d, 0",
			fs.SndUna-p.irs, fs.SndNxt-p.irs, fs.Outstanding, end, end)
	}
	if _, err := c.Write([]byte("reply 7")); err != nil {
		t.Fatal(err)
	}
	p.Expect(seg{Flags: "PA", Seq: end, Ack: rcvNxt + 9, Payload: []byte("reply 7")})
}

// TestHandOverRefused: HandOut refuses each state that is not a quiet
// point, says why, and changes nothing.
func TestHandOverRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxSegs int
		// setup brings the connection to the state; hold has the test
		// hold the endpoint's lock, as a user's call does, during HandOut.
		setup func(t *testing.T, p *scriptPeer, c net.Conn, mss int)
		hold  bool
		want  tcp.HandOutMiss
	}{
		{"locked", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {}, true, tcp.HandOutBusy},
		{"fin received", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			p.Send(seg{Flags: "FA", Seq: 1, Ack: 1})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 2})
		}, false, tcp.HandOutState},
		{"write shut", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			c.(*tcpConn).CloseWrite()
			p.Expect(seg{Flags: "FA", Seq: 1, Ack: 1})
			p.Send(seg{Flags: "A", Seq: 1, Ack: 2})
			p.ExpectNothing(10 * time.Millisecond)
		}, false, tcp.HandOutState},
		{"unread", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("unread")})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 7})
		}, false, tcp.HandOutReceive},
		{"out of order", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			p.Send(seg{Flags: "PA", Seq: 11, Ack: 1, Payload: []byte("later")})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 1, SACK: [][2]uint32{{11, 16}}})
		}, false, tcp.HandOutReceive},
		{"unsent", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			p.Send(seg{Flags: "A", Seq: 1, Ack: 1, Win: 25}) // 100 bytes, scaled
			p.ExpectNothing(10 * time.Millisecond)
			c.Write(diffPayload(0, 300))
			p.Expect(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: diffPayload(0, 100)})
		}, false, tcp.HandOutUnsent},
		{"in flight", 2, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			p.writeFlight(c, diffPayload(0, uint32(2*mss+1)))
		}, false, tcp.HandOutInFlight},
		{"zero window", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			p.Send(seg{Flags: "A", Seq: 1, Ack: 1, Win: zeroWin})
			p.ExpectNothing(10 * time.Millisecond)
		}, false, tcp.HandOutWindow},
		{"retransmitted", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			p.writeFlight(c, diffPayload(0, 10))
			p.awaitResend(1, "the unacknowledged segment")
		}, false, tcp.HandOutRecovery},
		{"keepalive unanswered", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			keepalive(t, c.(*tcpConn).ep, 20*time.Millisecond)
			p.Expect(seg{Flags: "A", Seq: 0, Ack: 1})
		}, false, tcp.HandOutKeepalive},
		{"sack hole", 8, func(t *testing.T, p *scriptPeer, c net.Conn, mss int) {
			starts, _ := p.writeFlight(c, diffPayload(0, uint32(2*mss)))
			p.Send(seg{Flags: "A", Seq: 1, Ack: 1, SACK: [][2]uint32{{starts[1], 1 + uint32(2*mss)}}})
			time.Sleep(10 * time.Millisecond)
		}, false, tcp.HandOutRecovery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c, ep := handOverPeer(t, handOverOptions())
			tc.setup(t, p, c, handOverMSS(t, ep))
			before := ep.FastState()
			if tc.hold {
				ep.LockUser()
			}
			h, buf, miss := ep.HandOut(nil, tc.maxSegs)
			if tc.hold {
				ep.UnlockUser()
			}
			if miss != tc.want {
				t.Fatalf("HandOut: %v, want %v", miss, tc.want)
			}
			if h.SndNxt != 0 || h.InFlight != nil || buf != nil {
				t.Errorf("HandOut refused and returned state %+v and %d bytes", h, len(buf))
			}
			if ep.Parked() {
				t.Fatal("HandOut refused and parked the endpoint")
			}
			if after := ep.FastState(); after != before {
				t.Errorf("HandOut refused and changed the connection\nbefore: %+v\nafter:  %+v", before, after)
			}
		})
	}
}

// TestHandOverParked: while a connection is parked netstack leaves it
// alone: a write waits for TakeBack, a segment that reaches netstack is
// held unanswered (the stack's hook told) and processed after TakeBack,
// a second HandOut is refused, and a TakeBack with an
// inconsistent state is refused and leaves it parked. Closed while
// parked, it ends without a segment and TakeBack says it is not parked.
func TestHandOverParked(t *testing.T) {
	t.Run("write and receive", func(t *testing.T) {
		p, c, ep := handOverPeer(t, handOverOptions())
		h := handOutOK(t, ep, 8, nil)
		if _, _, miss := ep.HandOut(nil, 8); miss != tcp.HandOutBusy {
			t.Errorf("a second HandOut: %v, want %v", miss, tcp.HandOutBusy)
		}
		wrote := make(chan error, 1)
		go func() {
			_, err := c.Write([]byte("written while parked"))
			wrote <- err
		}()
		busy := fastCounts(p.s.Stats())[tcp.FastMissBusy]
		p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("to netstack")})
		p.ExpectNothing(50 * time.Millisecond)
		if got := fastCounts(p.s.Stats())[tcp.FastMissBusy]; got != busy+1 {
			t.Errorf("the fast path's receive counted %d segments busy while parked, want 1", got-busy)
		}
		select {
		case err := <-wrote:
			t.Fatalf("a write returned while parked (%v)", err)
		default:
		}
		bad := h
		bad.SndNxt++
		if err := ep.TakeBack(&bad, nil, nil); !errors.Is(err, tcp.ErrBadHandOver) {
			t.Fatalf("TakeBack with a byte in flight and none given: %v, want %v", err, tcp.ErrBadHandOver)
		}
		bad = h
		bad.RcvEdge = bad.RcvNxt - 1
		if err := ep.TakeBack(&bad, nil, nil); !errors.Is(err, tcp.ErrBadHandOver) {
			t.Fatalf("TakeBack with the right edge before RCV.NXT: %v, want %v", err, tcp.ErrBadHandOver)
		}
		bad = h
		bad.LastAckSent = bad.RcvNxt + 1
		if err := ep.TakeBack(&bad, nil, nil); !errors.Is(err, tcp.ErrBadHandOver) {
			t.Fatalf("TakeBack with an ACK sent beyond RCV.NXT: %v, want %v", err, tcp.ErrBadHandOver)
		}
		if !ep.Parked() {
			t.Fatal("a TakeBack refused unparked the endpoint")
		}
		if err := ep.TakeBack(&h, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
		// The write, and the segment held while parked processed now,
		// in either order: its ACK alone or on the write's segment.
		var wroteSeg, acked bool
		for !wroteSeg || !acked {
			s, ok := p.next(scriptWait)
			if !ok {
				t.Fatalf("after TakeBack: the write sent %v, the held segment acknowledged %v", wroteSeg, acked)
			}
			if string(s.Payload) == "written while parked" && s.Seq == 1 {
				wroteSeg = true
			}
			if strings.Contains(s.Flags, "A") && s.Ack == 12 {
				acked = true
			}
		}
		if got := readUpTo(t, c, 11); string(got) != "to netstack" {
			t.Fatalf("the application read %q", got)
		}
		if err := ep.TakeBack(&h, nil, nil); !errors.Is(err, tcp.ErrNotParked) {
			t.Fatalf("a second TakeBack: %v, want %v", err, tcp.ErrNotParked)
		}
	})
	t.Run("close", func(t *testing.T) {
		p, c, ep := handOverPeer(t, handOverOptions())
		h := handOutOK(t, ep, 8, nil)
		c.Close()
		p.ExpectNothing(50 * time.Millisecond)
		if err := ep.TakeBack(&h, nil, nil); !errors.Is(err, tcp.ErrNotParked) {
			t.Fatalf("TakeBack after Close: %v, want %v", err, tcp.ErrNotParked)
		}
		// The peer's next segment finds no connection.
		p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("anyone?")})
		p.Expect(seg{Flags: "R", Seq: 1})
	})
}

// keepalive turns ep's keepalive on, probing after d idle and every d.
func keepalive(t *testing.T, ep *tcp.Endpoint, d time.Duration) {
	t.Helper()
	idle, interval := tcpip.KeepaliveIdleOption(d), tcpip.KeepaliveIntervalOption(d)
	if err := ep.SetSockOpt(&idle); err != nil {
		t.Fatal(err)
	}
	if err := ep.SetSockOpt(&interval); err != nil {
		t.Fatal(err)
	}
	ep.SocketOptions().SetKeepAlive(true)
}

// TestHandOverKeepalive: HandOut stops the keepalive timer (no probe
// while parked, however long) and TakeBack restores it (a probe after
// the idle time).
func TestHandOverKeepalive(t *testing.T) {
	p, _, ep := handOverPeer(t, handOverOptions())
	keepalive(t, ep, 50*time.Millisecond)
	h := handOutOK(t, ep, 8, nil)
	p.ExpectNothing(150 * time.Millisecond)
	if err := ep.TakeBack(&h, nil, nil); err != nil {
		t.Fatal(err)
	}
	p.Expect(seg{Flags: "A", Seq: 0, Ack: 1})
}

// TestHandOverAckOwed: a TakeBack with data received and not yet
// acknowledged (AckOwed) sends the ACK owed, at once with delayed ACKs
// off, within the delayed-ACK time with them on.
func TestHandOverAckOwed(t *testing.T) {
	for _, delack := range []time.Duration{-1, 20 * time.Millisecond} {
		t.Run(fmt.Sprintf("delack=%v", delack), func(t *testing.T) {
			o := handOverOptions()
			o.Config = func(c *Config) { c.DelayedAck = delack }
			p, _, ep := handOverPeer(t, o)
			h := handOutOK(t, ep, 8, nil)
			h.RcvNxt += 10 // a request the fast path took and did not answer
			h.AckOwed = true
			if err := ep.TakeBack(&h, nil, nil); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 11})
			if delack > 0 && time.Since(start) < delack/2 {
				t.Errorf("the ACK owed went after %v, before the delayed-ACK time %v", time.Since(start), delack)
			}
		})
	}
}

// TestHandOverAbort: Abort of a parked connection ends it without a
// segment, and TakeBack then reports it not parked.
func TestHandOverAbort(t *testing.T) {
	p, _, ep := handOverPeer(t, handOverOptions())
	h := handOutOK(t, ep, 8, nil)
	ep.Abort()
	p.ExpectNothing(50 * time.Millisecond)
	if err := ep.TakeBack(&h, nil, nil); !errors.Is(err, tcp.ErrNotParked) {
		t.Fatalf("TakeBack after Abort: %v, want %v", err, tcp.ErrNotParked)
	}
}

// TestHandOverQuietAllocs: a hand-out and take-back at a quiet point (no
// byte in flight) allocate nothing.
func TestHandOverQuietAllocs(t *testing.T) {
	_, _, ep := handOverPeer(t, handOverOptions())
	var fail error
	allocs := testing.AllocsPerRun(100, func() {
		h, _, miss := ep.HandOut(nil, 8)
		if miss != tcp.HandOutOK {
			fail = fmt.Errorf("HandOut: %v", miss)
			return
		}
		if err := ep.TakeBack(&h, nil, nil); err != nil {
			fail = err
		}
	})
	if fail != nil {
		t.Fatal(fail)
	}
	if allocs != 0 {
		t.Errorf("a quiet hand-out and take-back allocate %v times, want 0", allocs)
	}
}

// TestMemHandOverUnderTraffic: a goroutine hands the server's connection
// out and takes it straight back, with the state HandOut gave, as often
// as HandOut finds a quiet point, while 300 requests and replies of
// varying size cross the memory wire between two stacks: HandOut's
// TryLock and queue checks against the worker's receive and the
// application's reads and writes. Every reply must come back intact,
// and hand-outs must have happened, some with a reply in flight.
func TestMemHandOverUnderTraffic(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	eps := make(chan *tcp.Endpoint, 1)
	acceptEach(ln, func(c net.Conn) {
		eps <- c.(*tcpConn).ep
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				c.Close()
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				c.Close()
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := mp.a.DialContext(ctx, "tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := <-eps

	stop := make(chan struct{})
	type result struct{ handOuts, inFlight int }
	done := make(chan result, 1)
	go func() {
		var r result
		var buf []byte
		for {
			select {
			case <-stop:
				done <- r
				return
			default:
			}
			h, b, miss := ep.HandOut(buf[:0], 8)
			buf = b
			if miss != tcp.HandOutOK {
				runtime.Gosched()
				continue
			}
			r.handOuts++
			if len(buf) > 0 {
				r.inFlight++
			}
			if err := ep.TakeBack(&h, buf, nil); err != nil {
				t.Errorf("TakeBack: %v", err)
				done <- r
				return
			}
			// Leave the connection to netstack a moment: the
			// segments a parked connection drops are resent on
			// timers, and the run is bounded in time.
			time.Sleep(50 * time.Microsecond)
		}
	}()

	c.SetDeadline(time.Now().Add(20 * time.Second))
	rd := make([]byte, 4096)
	for i := range 300 {
		msg := diffPayload(uint32(i), uint32(1+i*13%3000))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, rd[:len(msg)]); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !bytes.Equal(rd[:len(msg)], msg) {
			t.Fatalf("request %d: the reply differs", i)
		}
	}
	close(stop)
	r := <-done
	t.Logf("%d hand-outs, %d with bytes in flight", r.handOuts, r.inFlight)
	if r.handOuts == 0 {
		t.Error("no hand-out in 300 requests")
	}
}

// BenchmarkHandOver: a hand-out and a take-back with the same state, at
// a quiet point and with a reply of 100 bytes in flight (whose segment
// TakeBack makes again each time, sent at the hand-out as far as it
// knows).
func BenchmarkHandOver(b *testing.B) {
	for _, inFlight := range []int{0, 100} {
		b.Run(fmt.Sprintf("inflight=%d", inFlight), func(b *testing.B) {
			p := newScriptPeer(b, handOverOptions())
			p.t = quietTB{p.t}
			c := p.Connect()
			ep := c.(*tcpConn).ep
			if inFlight > 0 {
				if _, err := c.Write(diffPayload(0, uint32(inFlight))); err != nil {
					b.Fatal(err)
				}
				p.Expect(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: diffPayload(0, uint32(inFlight))})
			}
			buf := make([]byte, 0, 64<<10)
			busy := 0
			b.Cleanup(func() { b.ReportMetric(float64(busy)/float64(b.N), "busy/op") })
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				h, got, miss := ep.HandOut(buf[:0], 8)
				for ; miss == tcp.HandOutBusy; busy++ {
					// A timer's handler holds the lock.
					runtime.Gosched()
					h, got, miss = ep.HandOut(buf[:0], 8)
				}
				if miss != tcp.HandOutOK {
					b.Fatalf("HandOut: %v", miss)
				}
				// Sent again now, as far as netstack knows: the
				// retransmission timer never comes due in a run.
				for i := range h.InFlight {
					h.InFlight[i].At = h.Now
				}
				if err := ep.TakeBack(&h, got, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHandOverAdvancedFastRetransmit: taken back with three segments in
// flight that a fast path sent past where netstack left SND.NXT, the
// connection enters loss recovery on duplicate ACKs and resends the
// first: NewReno's on three duplicates (TakeBack leaves RFC 6582's
// recovery point where netstack had it; moved to SND.UNA, the duplicates
// would not count as new loss), and SACK recovery on SACKs of the other
// two.
func TestHandOverAdvancedFastRetransmit(t *testing.T) {
	for _, sack := range []bool{false, true} {
		t.Run(fmt.Sprintf("sack=%v", sack), func(t *testing.T) {
			o := handOverOptions()
			o.NoSACK = !sack
			p, c, ep := handOverPeer(t, o)
			p.exchange(c, 1, 1, []byte("request 1"), []byte("reply 1"))
			p.Send(seg{Flags: "A", Seq: 10, Ack: 8})
			p.ExpectNothing(20 * time.Millisecond)
			h := handOutOK(t, ep, 8, nil)
			data := diffPayload(0, 300)
			for i := range 3 {
				h.InFlight = append(h.InFlight, tcp.HandOverSeg{End: h.SndNxt + uint32(100*(i+1)), At: h.Now})
			}
			h.SndNxt += 300
			if err := ep.TakeBack(&h, data, nil); err != nil {
				t.Fatal(err)
			}
			before := p.s.Stats()
			if sack {
				p.SendBatch(seg{Flags: "A", Seq: 10, Ack: 8, SACK: [][2]uint32{{108, 208}}},
					seg{Flags: "A", Seq: 10, Ack: 8, SACK: [][2]uint32{{108, 308}}})
			} else {
				p.SendBatch(seg{Flags: "A", Seq: 10, Ack: 8}, seg{Flags: "A", Seq: 10, Ack: 8}, seg{Flags: "A", Seq: 10, Ack: 8})
			}
			for {
				s, ok := p.next(scriptWait)
				if !ok {
					t.Fatal("ustack did not resend the first segment")
				}
				if s.Seq == 8 && len(s.Payload) > 0 {
					if !bytes.Equal(s.Payload, data[:100]) {
						t.Fatalf("the retransmission carries %q, want %q", s.Payload, data[:100])
					}
					break
				}
			}
			after := p.s.Stats()
			if n := after.TCP.Timeouts - before.TCP.Timeouts; n != 0 {
				t.Errorf("the first segment went again on a timeout (%d), not on the duplicate ACKs", n)
			}
			if !sack && after.TCP.FastRetransmits-before.TCP.FastRetransmits != 1 {
				t.Errorf("%d fast retransmits, want 1", after.TCP.FastRetransmits-before.TCP.FastRetransmits)
			}
			if sack && after.TCP.SACKRecoveries-before.TCP.SACKRecoveries != 1 {
				t.Errorf("%d SACK recoveries, want 1", after.TCP.SACKRecoveries-before.TCP.SACKRecoveries)
			}
			p.Send(seg{Flags: "A", Seq: 10, Ack: 308})
			p.exchange(c, 10, 308, []byte("request 2"), []byte("reply 2"))
		})
	}
}
