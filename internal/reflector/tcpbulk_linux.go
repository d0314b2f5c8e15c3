package reflector

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/offload"
	"github.com/ustack-dev/ustack/xsk"
)

// The TCP bulk floors for a kernel TCP client, on the floor's next two
// ports, speaking the bulk workloads' protocols (package echo's
// ServeDiscard and ServeSource):
//
//   - the sink (Port+1) takes the client's stream in order, acknowledges
//     it cumulatively once per received batch with an 8 MiB window, and
//     answers the client's FIN with the count of bytes it took (8 bytes,
//     big-endian) and a FIN of its own;
//   - the source (Port+2) reads the client's request (8 bytes of
//     nanoseconds), sends MSS-sized segments up to the right edge of the
//     client's advertised window for that long, advancing on its ACKs,
//     then a FIN.
//
// Neither has congestion control, timers beyond one, options beyond the
// MSS and window scale, or more state than a bulkFlow. The sink notes
// the range of a segment past RCV.NXT (counted: a loss before it; up to
// four ranges, never the bytes) and acknowledges RCV.NXT again at once,
// so the client retransmits the hole, after which RCV.NXT moves past
// the ranges, as a receiver with an out-of-order queue does; the source goes back to
// SND.UNA on three duplicate ACKs or 200 ms without progress (counted),
// which is all it needs not to deadlock on a loss.

// bulkSlots is how many flows the bulk floors keep at once: a
// direct-mapped table, a new flow's SYN taking over its slot.
const bulkSlots = 64

// bulkWScale is the window scale the bulk floors announce (when the
// client offers one): their 65535-byte window field then means 8 MiB,
// more than a kernel client's send buffer holds.
const bulkWScale = 7

// bulkStall is how long the source waits for an ACK that advances before
// it sends again from SND.UNA.
const bulkStall = 200 * time.Millisecond

// patternPeriod is how often the source's payload repeats: its byte k of
// a stream is byte k mod patternPeriod of one pattern, so a segment sent
// again carries the same bytes.
const patternPeriod = 64 << 10

// TCPBulkStats counts the TCP sink's and source's work. It may be read
// while the floor runs.
type TCPBulkStats struct {
	SinkSegments atomic.Int64 // data segments the sink took (some of their bytes new)
	SinkBytes    atomic.Int64 // payload bytes the sink took in order
	// OutOfOrder counts segments the sink dropped for starting past
	// RCV.NXT: each follows a loss.
	OutOfOrder   atomic.Int64
	SourceBytes  atomic.Int64 // payload bytes the source sent, retransmissions included
	SourceFrames atomic.Int64 // segments the source sent, retransmissions included
	// Retransmits counts the times the source went back to SND.UNA:
	// each follows a loss (or an ACK held back 200 ms).
	Retransmits atomic.Int64
	Ignored     atomic.Int64 // segments for no flow, or refused
}

// Losses returns the losses the bulk floors saw: the sink's
// out-of-order segments and the source's retransmissions.
func (s *TCPBulkStats) Losses() int64 { return s.OutOfOrder.Load() + s.Retransmits.Load() }

// Reset zeroes the counters.
func (s *TCPBulkStats) Reset() {
	for _, c := range []*atomic.Int64{&s.SinkSegments, &s.SinkBytes, &s.OutOfOrder, &s.SourceBytes, &s.SourceFrames, &s.Retransmits, &s.Ignored} {
		c.Store(0)
	}
}

// bulkFlow is one kernel client's connection to the sink or the source,
// all the state either keeps. Like the TCP echo, both take the client's
// initial sequence number for their own.
type bulkFlow struct {
	key    flowKey
	source bool        // the source's flow, else the sink's
	tmpl   tcpTemplate // the floor's segments' headers, no options
	irs    uint32      // the client's initial sequence number, and the floor's
	// rcvNxt is the next byte expected from the client; received counts
	// the bytes the sink took, which may pass 4 GiB.
	rcvNxt   uint32
	received int64
	finRcvd  bool
	// holes holds the ranges that arrived past RCV.NXT; with sack the
	// sink's ACKs carry the first four as SACK blocks (RFC 2018).
	holes seqRanges
	sack  bool
	// The source's sending state: SND.UNA, SND.NXT, the most ever sent,
	// and the right edge of the client's window, which never moves left.
	sndUna, sndNxt, sndMax, sndEdge uint32
	wscale                          uint8 // the client's window scale
	mss                             int   // payload per segment
	dupAcks                         int
	// recover is SND.MAX when the source last went back: duplicate ACKs
	// count again once SND.UNA passes it.
	recover uint32
	// streamFor is how long a stream the client asked for (0 before its
	// request); started says the stream ran.
	streamFor time.Duration
	started   bool
	// end is the sequence number of the source's FIN, once ended.
	end   uint32
	ended bool
}

// seqRanges is what a receiver notes of segments that arrived past
// RCV.NXT: their sequence ranges, merged where they touch, the most
// recently grown first, up to eight. A range that would make a ninth is
// not noted (nor acknowledged: the client sends it again).
type seqRanges struct {
	r [8][2]uint32 // [start, end)
	n int
}

// add notes the range [start, end).
func (q *seqRanges) add(start, end uint32) {
	for i := 0; i < q.n; {
		if r := q.r[i]; !seqGT(start, r[1]) && !seqLT(end, r[0]) { // they touch
			if seqLT(r[0], start) {
				start = r[0]
			}
			if seqGT(r[1], end) {
				end = r[1]
			}
			q.remove(i)
			continue
		}
		i++
	}
	if q.n == len(q.r) {
		return
	}
	copy(q.r[1:q.n+1], q.r[:q.n])
	q.r[0] = [2]uint32{start, end}
	q.n++
}

// remove removes range i, keeping the others' order.
func (q *seqRanges) remove(i int) {
	copy(q.r[i:q.n-1], q.r[i+1:q.n])
	q.n--
}

// take removes the ranges that start at or before next, which is
// RCV.NXT, and returns RCV.NXT past them.
func (q *seqRanges) take(next uint32) uint32 {
	for i := 0; i < q.n; {
		if r := q.r[i]; !seqGT(r[0], next) {
			if seqGT(r[1], next) {
				next = r[1]
			}
			q.remove(i)
			i = 0
			continue
		}
		i++
	}
	return next
}

// bulkTCP is the floor's TCP sink and source: their flows and settings.
type bulkTCP struct {
	r                    *Responder
	stats                *TCPBulkStats
	sinkPort, sourcePort uint16
	// mss is the MSS the SYN-ACKs announce: the link's MTU less IPv4 and
	// TCP headers. refuse drops everything: segments of a link whose
	// MTU needs multi-buffer frames, which the floor's TCP does not take.
	mss    int
	refuse bool
	slots  [bulkSlots]bulkFlow
}

func newBulkTCP(r *Responder, stats *TCPBulkStats, port uint16, mtu int) *bulkTCP {
	return &bulkTCP{r: r, stats: stats, sinkPort: port + 1, sourcePort: port + 2, mss: mtu - ipv4Len - tcpLen, refuse: needsMultiBuffer(mtu)}
}

// ports reports whether a segment to port is the sink's or the source's.
func (b *bulkTCP) ports(port uint16) bool { return port == b.sinkPort || port == b.sourcePort }

// slot returns the table slot of a flow.
func (b *bulkTCP) slot(k flowKey) *bulkFlow {
	return &b.slots[(uint(k.peer[3])^uint(k.pport)^uint(k.pport>>8)^uint(k.lport))&(bulkSlots-1)]
}

// input handles a segment s parsed from the frame f, to the sink's or
// the source's port. It returns the length of a reply it wrote over f
// to send now (a SYN-ACK, the sink's answer to a FIN), or the flow that
// owes the client an ACK (writeAck, once per batch, over the last frame
// of the flow's in the batch), or neither: drop f. f holds the received
// frame and the room after it in its UMEM frame.
func (b *bulkTCP) input(f []byte, s tcp4) (int, *bulkFlow) {
	if b.refuse || s.dst.Addr().As4() != b.r.IP || s.ipOptional {
		b.stats.Ignored.Add(1)
		return 0, nil
	}
	switch offload.Verify(f[:s.frameLen]) {
	case offload.Valid, offload.Partial:
	default:
		b.r.BadChecksums.Add(1)
		return 0, nil
	}
	k := flowKey{peer: s.src.Addr().As4(), pport: s.src.Port(), lport: s.dst.Port(), used: true}
	fl := b.slot(k)
	if s.flags&(tcpSyn|tcpAck|tcpRst) == tcpSyn {
		*fl = bulkFlow{key: k, source: k.lport == b.sourcePort, irs: s.seq, rcvNxt: s.seq + 1, mss: b.mss}
		fl.tmpl.init(net.HardwareAddr(f[6:12]), b.r.MAC, s.dst, s.src, false)
		if s.mss > 0 {
			fl.mss = min(fl.mss, int(s.mss))
		}
		ws := -1
		if s.wscale >= 0 {
			fl.wscale, ws = uint8(s.wscale), bulkWScale
		}
		fl.sack = s.sackOK && !fl.source
		fl.sndUna, fl.sndNxt, fl.sndMax, fl.recover = s.seq+1, s.seq+1, s.seq+1, s.seq+1
		fl.sndEdge = s.seq + 1 + uint32(s.wnd) // a SYN's window is not scaled
		b.r.TCP.Add(1)
		return fl.writeSynAck(f, b.mss, ws, fl.sack), nil
	}
	if fl.key != k || s.flags&tcpSyn != 0 {
		b.stats.Ignored.Add(1)
		return 0, nil
	}
	if s.flags&tcpRst != 0 {
		fl.key = flowKey{}
		return 0, nil
	}
	if s.flags&tcpAck == 0 {
		b.stats.Ignored.Add(1)
		return 0, nil
	}
	if fl.source {
		fl.onAck(s.ack, s.wnd, len(s.payload) > 0 || s.flags&tcpFin != 0)
	}
	n := len(s.payload)
	fin := s.flags&tcpFin != 0
	if n == 0 && !fin {
		return 0, nil // a pure ACK
	}
	if fl.finRcvd {
		// Past the client's FIN: the sink's answer again for a FIN
		// sent again (the answer was lost), else an ACK.
		if fin && !fl.source {
			return fl.writeCount(f), nil
		}
		return 0, fl
	}
	switch d := int32(s.seq - fl.rcvNxt); {
	case d > 0:
		// Past a hole: its range is noted (not its bytes, which the
		// sink never keeps), and RCV.NXT acknowledged at once, as
		// Linux does, so that the client's fast retransmit comes.
		b.stats.OutOfOrder.Add(1)
		if n > 0 {
			fl.holes.add(s.seq, s.seq+uint32(n))
		}
		return fl.writeAck(f), nil
	case d+int32(n) > 0:
		fresh := s.payload[-d:]
		if fl.source && fl.rcvNxt == fl.irs+1 && fl.streamFor == 0 && len(fresh) >= 8 {
			fl.streamFor = min(time.Duration(binary.BigEndian.Uint64(fresh)), MaxStream)
		}
		took := uint32(len(fresh))
		fl.rcvNxt += took
		// Ranges that arrived past the hole this filled count now.
		next := fl.holes.take(fl.rcvNxt)
		took += next - fl.rcvNxt
		fl.rcvNxt = next
		fl.received += int64(took)
		if !fl.source {
			b.stats.SinkSegments.Add(1)
			b.stats.SinkBytes.Add(int64(took))
		}
	}
	if fin && s.seq+uint32(n) == fl.rcvNxt {
		fl.rcvNxt++
		fl.finRcvd = true
		if !fl.source {
			return fl.writeCount(f), nil
		}
	}
	return 0, fl
}

// writeSynAck writes the flow's SYN-ACK into f, announcing mss, if
// ws ≥ 0 a window scale of ws, and if sack SACK permitted, and returns
// its length.
func (fl *bulkFlow) writeSynAck(f []byte, mss, ws int, sack bool) int {
	var o [12]byte
	copy(o[:], []byte{tcpOptMSS, 4, byte(mss >> 8), byte(mss)})
	n := 4
	if ws >= 0 {
		n += copy(o[n:], []byte{tcpOptNOP, tcpOptWS, 3, byte(ws)})
	}
	if sack {
		n += copy(o[n:], []byte{tcpOptNOP, tcpOptNOP, tcpOptSACKOK, 2})
	}
	return fl.writeOpts(f, fl.irs, fl.rcvNxt, tcpSyn|tcpAck, o[:n])
}

// writeOpts writes a segment with no payload and the options opts (a
// multiple of 4 bytes) into f and returns its length, 0 if f is too
// short.
func (fl *bulkFlow) writeOpts(f []byte, seq, ack uint32, flags byte, opts []byte) int {
	n := fl.tmpl.n + len(opts)
	if len(f) < n {
		return 0
	}
	copy(f, fl.tmpl.hdr[:fl.tmpl.n])
	copy(f[fl.tmpl.n:], opts)
	ip := f[ethLen : ethLen+ipv4Len]
	binary.BigEndian.PutUint16(ip[2:], uint16(n-ethLen))
	binary.BigEndian.PutUint16(ip[10:], ^offload.Fold(offload.Add(fl.tmpl.ipSum, offload.Word(uint16(n-ethLen)))))
	tcp := f[ethLen+ipv4Len : n]
	binary.BigEndian.PutUint32(tcp[4:], seq)
	binary.BigEndian.PutUint32(tcp[8:], ack)
	tcp[12] = byte(len(tcp)/4) << 4
	tcp[13] = flags
	binary.BigEndian.PutUint16(tcp[16:], 0)
	binary.BigEndian.PutUint16(tcp[16:], ^offload.Fold(offload.Sum(tcp, offload.PseudoHeader4(ip[12:16], ip[16:20], protoTCP, len(tcp)))))
	return n
}

// sinkSeq is the sequence number of the sink's next segment: its count
// (and FIN) follow the SYN, and its ACKs after them carry the number
// after its FIN.
func (fl *bulkFlow) sinkSeq() uint32 {
	if fl.finRcvd {
		return fl.irs + 1 + 8 + 1
	}
	return fl.irs + 1
}

// writeAck writes a pure ACK of RCV.NXT into f and returns its length.
func (fl *bulkFlow) writeAck(f []byte) int {
	seq := fl.sndNxt
	if !fl.source {
		seq = fl.sinkSeq()
	}
	if !fl.sack || fl.holes.n == 0 {
		return fl.tmpl.write(f, seq, fl.rcvNxt, tcpAck, 0, 0, nil)
	}
	// The ranges past the hole as SACK blocks, the latest first.
	var o [36]byte
	k := min(fl.holes.n, 4)
	o[0], o[1], o[2], o[3] = tcpOptNOP, tcpOptNOP, tcpOptSACK, byte(2+8*k)
	for i, r := range fl.holes.r[:k] {
		binary.BigEndian.PutUint32(o[4+8*i:], r[0])
		binary.BigEndian.PutUint32(o[8+8*i:], r[1])
	}
	return fl.writeOpts(f, seq, fl.rcvNxt, tcpAck, o[:4+8*k])
}

// writeCount writes the sink's answer to the client's FIN into f: the
// bytes it took, as 8 bytes big-endian, with a FIN.
func (fl *bulkFlow) writeCount(f []byte) int {
	var c [8]byte
	binary.BigEndian.PutUint64(c[:], uint64(fl.received))
	return fl.tmpl.write(f, fl.irs+1, fl.rcvNxt, tcpAck|tcpPsh|tcpFin, 0, 0, c[:])
}

// onAck takes the client's acknowledgment and window: SND.UNA moves up
// to ack (a later ACK than any send is ignored), the window's right
// edge moves right, and an ACK that moves neither while data is in
// flight, carrying no data, counts as a duplicate.
func (fl *bulkFlow) onAck(ack uint32, wnd uint16, carries bool) {
	if seqGT(ack, fl.sndMax) {
		return
	}
	edge := ack + uint32(wnd)<<fl.wscale
	switch {
	case seqGT(ack, fl.sndUna):
		fl.sndUna = ack
		fl.dupAcks = 0
		if seqGT(ack, fl.sndNxt) {
			fl.sndNxt = ack // acknowledged before it was sent again
		}
	case ack == fl.sndUna && fl.sndMax != fl.sndUna && !carries && edge == fl.sndEdge && !seqLT(fl.sndUna, fl.recover):
		fl.dupAcks++
	}
	if seqGT(edge, fl.sndEdge) {
		fl.sndEdge = edge
	}
}

// fastRetransmit goes back to SND.UNA after three duplicate ACKs and
// reports whether it did.
func (fl *bulkFlow) fastRetransmit() bool {
	if fl.dupAcks < 3 {
		return false
	}
	fl.goBack()
	return true
}

// goBack sends again from SND.UNA.
func (fl *bulkFlow) goBack() {
	fl.sndNxt = fl.sndUna
	fl.recover = fl.sndMax
	fl.dupAcks = 0
}

// finAcked reports whether the source's FIN was acknowledged.
func (fl *bulkFlow) finAcked() bool { return fl.ended && fl.sndUna == fl.end+1 }

// nextSegment writes the source's next segment into out: up to mss
// bytes of the stream within the client's window, no segment short of
// mss while data is in flight (no silly windows), and after end its FIN.
// It returns the frame's length and payload bytes, or 0 when the window
// or the stream allows nothing.
func (fl *bulkFlow) nextSegment(out, pattern []byte) (frame, payload int) {
	room := int(int32(fl.sndEdge - fl.sndNxt))
	if fl.ended {
		if fl.sndNxt == fl.end {
			// The FIN, which takes no window.
			frame = fl.tmpl.write(out, fl.end, fl.rcvNxt, tcpAck|tcpFin, 0, 0, nil)
			if frame > 0 {
				fl.sndNxt = fl.end + 1
				if seqGT(fl.sndNxt, fl.sndMax) {
					fl.sndMax = fl.sndNxt
				}
			}
			return frame, 0
		}
		room = min(room, int(int32(fl.end-fl.sndNxt)))
	}
	n := min(room, fl.mss)
	if n <= 0 || n < fl.mss && fl.sndNxt != fl.sndUna && !fl.ended {
		return 0, 0
	}
	off := int((fl.sndNxt - fl.irs - 1) % patternPeriod)
	frame = fl.tmpl.write(out, fl.sndNxt, fl.rcvNxt, tcpAck, 0, 0, pattern[off:off+n])
	if frame == 0 {
		return 0, 0
	}
	fl.sndNxt += uint32(n)
	if seqGT(fl.sndNxt, fl.sndMax) {
		fl.sndMax = fl.sndNxt
	}
	return frame, n
}

// endStream ends the stream after what was sent: the FIN goes next.
func (fl *bulkFlow) endStream() {
	if !fl.ended {
		fl.ended, fl.end = true, fl.sndMax
	}
}

// newPattern returns the source's payload pattern, long enough for a
// segment of mss bytes to start anywhere in a period.
func newPattern(mss int) []byte {
	p := make([]byte, patternPeriod+mss)
	for i := range p {
		p[i] = byte(i)
	}
	return p
}

func seqGT(a, b uint32) bool { return int32(a-b) > 0 }
func seqLT(a, b uint32) bool { return int32(a-b) < 0 }

// tcpDstPort returns the TCP destination port of an Ethernet/IPv4 frame,
// or false for another kind of frame.
func tcpDstPort(f []byte) (uint16, bool) {
	if len(f) < ethLen+ipv4Len+tcpLen || binary.BigEndian.Uint16(f[12:]) != etherTypeIPv4 || f[ethLen+9] != protoTCP {
		return 0, false
	}
	ihl := int(f[ethLen]&0xf) * 4
	if len(f) < ethLen+ihl+4 {
		return 0, false
	}
	return binary.BigEndian.Uint16(f[ethLen+ihl+2:]), true
}

// streamTCP runs the TCP source's stream to fl's client, whose request
// came: segments cut into fresh transmit frames behind the flow's
// template, the checksum computed in the copy, as many a kick as the
// client's window and the TX ring allow, until the time asked for has
// passed and the FIN after it is acknowledged (or 10 s more, or stop).
// It reads the client's ACKs itself; anything else that arrives
// meanwhile is recycled. It waits up to a second for its frames'
// completions.
func (f *Floor) streamTCP(b *bulkTCP, fl *bulkFlow, stop <-chan struct{}, deadline time.Time) {
	fl.started = true
	pattern := newPattern(fl.mss)
	// Reflected frames go back to receiving before the transmit pool is
	// used for the stream, whose frames come back through Complete.
	if !f.Fresh {
		f.Sock.CompleteToFill()
	}
	u := f.Sock.UMEM()
	descs := make([]xsk.Desc, 64)
	batch := make([]xsk.Desc, 0, xsk.DefaultRingSize)
	start := time.Now()
	until, hard := start.Add(fl.streamFor), start.Add(fl.streamFor+10*time.Second)
	lastProgress, una := start, fl.sndUna
	var queued, completed int64
	for i := 0; ; i++ {
		if i%64 == 0 {
			now := time.Now()
			if !now.Before(until) {
				fl.endStream()
			}
			if now.After(hard) || Done(stop, deadline) {
				break
			}
			switch {
			case fl.sndUna != una:
				una, lastProgress = fl.sndUna, now
			case fl.sndMax != fl.sndUna && now.Sub(lastProgress) > bulkStall:
				fl.goBack()
				f.TCPBulk.Retransmits.Add(1)
				lastProgress = now
			}
		}
		completed += int64(f.Sock.Complete())
		owe := false
		if n := f.Sock.Receive(descs); n > 0 {
			for _, d := range descs[:n] {
				fr := u.Data(d)
				if port, ok := tcpDstPort(fr); !ok || port != b.sourcePort {
					continue
				}
				s, ok := parseTCP4(fr)
				if !ok || s.flags&tcpSyn != 0 || s.src.Port() != fl.key.pport || s.src.Addr().As4() != fl.key.peer {
					continue
				}
				whole := u.Frame(d.Addr)
				if _, o := b.input(whole[d.Addr&uint64(len(whole)-1):], s); o != nil {
					owe = true
				}
			}
			f.Sock.Recycle(descs[:n])
		} else {
			f.Sock.Refill()
		}
		if fl.fastRetransmit() {
			f.TCPBulk.Retransmits.Add(1)
			lastProgress = time.Now()
		}
		if fl.finAcked() {
			break
		}
		batch = batch[:0]
		room := f.Sock.TxRoom(cap(batch))
		var bytes int64
		for len(batch) < room {
			a, ok := f.Sock.Alloc()
			if !ok {
				break
			}
			m, p := fl.nextSegment(u.Frame(a), pattern)
			if m == 0 {
				f.Sock.Free(a)
				break
			}
			batch = append(batch, xsk.Desc{Addr: a, Len: uint32(m)})
			bytes += int64(p)
		}
		if len(batch) == 0 && owe && room > 0 {
			// Nothing to send the ACK with (the FIN went).
			if a, ok := f.Sock.Alloc(); ok {
				batch = append(batch, xsk.Desc{Addr: a, Len: uint32(fl.writeAck(u.Frame(a)))})
			}
		}
		if len(batch) > 0 {
			// The room was reserved: every frame is taken.
			q := f.Sock.Enqueue(batch)
			for _, d := range batch[q:] {
				f.Sock.Free(d.Addr)
			}
			queued += int64(q)
			f.TCPBulk.SourceFrames.Add(int64(q))
			f.TCPBulk.SourceBytes.Add(bytes)
		}
		if len(batch) > 0 || f.Sock.TxQueued() > 0 {
			f.Sock.Kick()
		}
	}
	for t0 := time.Now(); completed < queued && time.Since(t0) < time.Second; {
		f.Sock.Kick()
		completed += int64(f.Sock.Complete())
	}
}
