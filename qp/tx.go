package qp

import (
	"encoding/binary"
	"sync/atomic"
)

// Framing out: posted send requests become FPDUs in the queue pair's
// transmit buffer. pumpLocked (under txMu) takes requests in order,
// stops at one a fence or the ORD limit holds back, encodes each
// (encode, sendSegments, sendControl) straight from registered memory
// (fill) with the CRCs computed just before the buffer is written out
// (txSeal), and retires Sends and Writes once the transport has them.
// Responses to the peer's requests are in respond.go, the writes
// themselves in transport.go.

// maxPayload is the most bytes a segment with a header of hdr bytes
// carries in an FPDU of at most maxFPDU bytes.
func maxPayload(maxFPDU, hdr int) int { return maxFPDU - fpduOverhead - hdr }

// lendMin is the least a write lends of txbuf (capability.LendWriter):
// below it the copy into the send buffer costs less than the lent chunk,
// and a small message (write_lat) keeps the path it had.
const lendMin = 16 << 10

// txBuf holds a transmit buffer that can be lent to the connection
// (capability.LendWriter): refs counts the queue pair's own reference and
// one for each lend, and the buffer goes back on the queue pair's free
// list when all are released.
type txBuf struct {
	b    []byte
	refs atomic.Int32
	q    *QP
}

// Release implements capability.Lender: the connection, or the queue
// pair (txRenew), is done with the buffer. It runs on the worker with the
// connection locked: it only takes txFreeMu.
func (t *txBuf) Release() {
	if t.refs.Add(-1) == 0 {
		q := t.q
		q.txFreeMu.Lock()
		q.txFree = append(q.txFree, t)
		q.txFreeMu.Unlock()
	}
}

// newTxBuf returns a free transmit buffer, held once (the queue pair's).
func (q *QP) newTxBuf() *txBuf {
	var t *txBuf
	q.txFreeMu.Lock()
	if n := len(q.txFree); n > 0 {
		t = q.txFree[n-1]
		q.txFree[n-1] = nil
		q.txFree = q.txFree[:n-1]
	}
	q.txFreeMu.Unlock()
	if t == nil {
		t = &txBuf{b: make([]byte, txBufLen(q.cfg.MaxFPDU)), q: q}
	}
	t.refs.Store(1)
	return t
}

// txRenew starts txbuf afresh once all of it is written out: a lent one
// is swapped for a free one (the connection may still read it), another
// is reused. Caller holds txMu.
func (q *QP) txRenew() {
	if q.txLent && q.txb.refs.Load() == 1 {
		// Every lend released (or none took anything): txbuf is the
		// queue pair's alone again. Lends are added only under txMu.
		q.txLent = false
	}
	if q.txLent {
		old := q.txb
		q.txb = q.newTxBuf()
		q.txLent = false
		old.Release()
	}
	q.txn, q.txout, q.txSealed = 0, 0, 0
}

// txFits reports whether n more bytes fit in txbuf, starting it afresh
// if that makes room.
func (q *QP) txFits(n int) bool {
	if len(q.txb.b)-q.txn >= n {
		return true
	}
	if q.txout == q.txn {
		q.txRenew()
	}
	return len(q.txb.b)-q.txn >= n
}

// lendTx reports whether b, txbuf's bytes to write, goes to the
// connection lent, and if so takes the lend's reference to txbuf.
func (q *QP) lendTx(b []byte) bool {
	if q.lender == nil || len(b) < lendMin {
		return false
	}
	q.txb.refs.Add(1)
	q.txLent = true
	return true
}

// txPending reports whether txbuf holds bytes not yet written out.
func (q *QP) txPending() bool { return q.txout < q.txn }

// txReserve makes room for one FPDU in txbuf, writing out what is there
// if need be.
func (q *QP) txReserve() error {
	if q.txFits(q.cfg.MaxFPDU) {
		return nil
	}
	return q.txFlush()
}

// txTryFlush writes what of txbuf the connection takes without waiting
// and keeps the rest, in order, for the next flush.
func (q *QP) txTryFlush() error {
	if !q.txPending() {
		return nil
	}
	q.txSeal()
	b := q.txb.b[q.txout:q.txn]
	var n int
	var err error
	if q.lendTx(b) {
		n, err = q.lender.TryWriteLent(b, q.txb)
	} else {
		n, err = q.tryWrite(b)
	}
	q.txout += n
	if q.txout == q.txn && !q.txLent {
		q.txn, q.txout, q.txSealed = 0, 0, 0
	} else if n > 0 && !q.txLent {
		// The rest to the front: txbuf is the queue pair's alone.
		q.txn = copy(q.txb.b, q.txb.b[q.txout:q.txn])
		q.txout, q.txSealed = 0, q.txn
	}
	return err
}

// txSeal computes the CRCs of the FPDUs framed in txbuf since it last
// ran: at once, before they are written, for crcFPDUs to run three
// FPDUs' CRCs side by side.
func (q *QP) txSeal() {
	crcFPDUs(q.txb.b[q.txSealed:q.txn])
	q.txSealed = q.txn
}

// txFlush writes txbuf to the connection.
func (q *QP) txFlush() error {
	if !q.txPending() {
		return nil
	}
	q.txSeal()
	b := q.txb.b[q.txout:q.txn]
	var err error
	if q.lendTx(b) {
		_, err = q.lender.WriteLent(b, q.txb)
	} else {
		_, err = q.conn.Write(b)
	}
	q.txout = q.txn
	q.txRenew()
	return err
}

// payload is a message's data: inline bytes, or an SGL read through
// locked regions as it is copied.
type payload struct {
	inline []byte
	sgl    []SGE
	i      int    // current SGE
	off    uint32 // offset in it
	total  int
}

func newPayload(inline []byte, sgl []SGE) payload {
	p := payload{inline: inline, sgl: sgl}
	if inline != nil {
		p.total = len(inline)
	}
	for _, s := range sgl {
		p.total += int(s.Len)
	}
	return p
}

// fillUnlock releases the region fill holds, if any (q.fillMR).
func (q *QP) fillUnlock() {
	if q.fillMR != nil {
		q.fillMR.mu.RUnlock()
		q.fillMR = nil
	}
}

// fill copies the next len(dst) bytes into dst; false if a region was
// deregistered since posting (then it holds no lock). It keeps the
// current SGE's region read-locked (q.fillMR) from the SGE's first copy
// until the SGE is used up or the transmit buffer is written out
// (fillUnlock), so that Dereg never waits on the network. Caller holds
// txMu.
func (q *QP) fill(dst []byte, p *payload) bool {
	if p.inline != nil {
		n := copy(dst, p.inline)
		p.inline = p.inline[n:]
		return true
	}
	for len(dst) > 0 {
		s := &p.sgl[p.i]
		n := min(len(dst), int(s.Len-p.off))
		if n > 0 {
			o := s.Offset + uint64(p.off)
			if q.fillMR == nil {
				// The rest of the SGE, checked and locked once.
				mr, _, ok := q.dev.lookup(s.Key, q.pd, 0, o, uint64(s.Len-p.off))
				if !ok {
					return false
				}
				q.fillMR = mr
			}
			copy(dst[:n], q.fillMR.buf[o:o+uint64(n)])
		}
		dst = dst[n:]
		p.off += uint32(n)
		if p.off == s.Len {
			q.fillUnlock()
			p.i++
			p.off = 0
		}
	}
	return true
}

// segHdr describes the DDP/RDMAP headers of one message's segments: a
// tagged message's (Write, Read Response) advance the tagged offset, an
// untagged one's the message offset.
type segHdr struct {
	tagged bool
	op     Opcode
	stag   uint32 // tagged
	to     uint64 // tagged
	inv    uint32 // untagged: the STag a Send with Invalidate names
	qn     uint32 // untagged
	msn    uint32 // untagged
	mo     uint32 // untagged
}

// len is the length of the message's segment headers.
func (h *segHdr) len() int {
	if h.tagged {
		return taggedHdrLen
	}
	return untaggedHdrLen
}

// put writes the header of the next segment, of n payload bytes, at b
// and returns its length.
func (h *segHdr) put(b []byte, last bool, n int) int {
	if h.tagged {
		l := putTagged(b, h.op, last, h.stag, h.to)
		h.to += uint64(n)
		return l
	}
	l := putUntagged(b, h.op, last, h.inv, h.qn, h.msn, h.mo)
	h.mo += uint32(n)
	return l
}

// sendTagged encodes a tagged message (Write, Read Response).
func (q *QP) sendTagged(op Opcode, stag uint32, to uint64, p *payload) (bool, error) {
	return q.sendSegments(&segHdr{tagged: true, op: op, stag: stag, to: to}, p)
}

// sendUntagged encodes an untagged message on op's queue.
func (q *QP) sendUntagged(op Opcode, inv uint32, p *payload) (bool, error) {
	qn := op.queue()
	q.msnOut[qn]++
	return q.sendSegments(&segHdr{op: op, inv: inv, qn: qn, msn: q.msnOut[qn]}, p)
}

// sendSegments encodes a message into txbuf as FPDUs of at most MaxFPDU
// bytes.
func (q *QP) sendSegments(h *segHdr, p *payload) (bool, error) {
	most := maxPayload(q.cfg.MaxFPDU, h.len())
	left := p.total
	// fill unlocks a region when its SGE is used up, which the last FPDU
	// does; the unlocks here are for the other ways out.
	for first := true; first || left > 0; first = false {
		if len(q.txb.b)-q.txn < q.cfg.MaxFPDU {
			q.fillUnlock() // txReserve may write to the network
		}
		if err := q.txReserve(); err != nil {
			q.fillUnlock()
			return true, err
		}
		n := min(left, most)
		b := q.txb.b[q.txn:]
		l := h.put(b[fpduLenLen:], n == left, n)
		if !q.fill(b[fpduLenLen+l:fpduLenLen+l+n], p) {
			return false, nil
		}
		q.txn += frameFPDU(b, l+n)
		left -= n
	}
	q.fillUnlock()
	return true, nil
}

// sendControl encodes a one-segment untagged message whose body put
// writes.
func (q *QP) sendControl(op Opcode, n int, put func([]byte)) error {
	if err := q.txReserve(); err != nil {
		return err
	}
	qn := op.queue()
	q.msnOut[qn]++
	b := q.txb.b[q.txn:]
	h := putUntagged(b[fpduLenLen:], op, true, 0, qn, q.msnOut[qn], 0)
	put(b[fpduLenLen+h : fpduLenLen+h+n])
	q.txn += frameFPDU(b, h+n)
	return nil
}

// pumpLocked transmits posted requests in order until one is held back
// (a fence or the ORD limit), then writes txbuf out and retires Sends and
// Writes: they complete once handed to the transport, as in iWARP.
// Without block (on the engine's goroutine, from OnInput) it never waits
// for the transport: it encodes only the requests that fit in txbuf,
// writes what the connection takes at once, and leaves the rest to the
// transmit goroutine, which completes them once it has written them.
// Caller holds txMu.
func (q *QP) pumpLocked(block bool) {
	q.mu.Lock()
	if q.state != StateRTS {
		q.mu.Unlock()
		return
	}
	// Requests from handed on are encoded (a non-blocking pump may have
	// left their bytes in txbuf) or still to encode. q.mu is let go
	// only while a request is encoded: a one-request pump takes it
	// three times in all, here, after the encoding and for completion.
	from := q.handed
	left := false // requests left for the transmit goroutine
	for q.state == StateRTS && q.sent != q.tail {
		s := &q.sq[q.sent%uint64(len(q.sq))]
		need := 0
		switch s.wr.Op {
		case WRRead:
			need = max(1, len(s.wr.SGL))
		case WRFetchAdd, WRCmpSwap:
			need = 1
		}
		if (s.wr.Flags&Fence != 0 && q.ordN > 0) || q.ordN+need > len(q.ord) {
			break
		}
		if !block && !q.txFits(q.fpdus(&s.wr)*q.cfg.MaxFPDU) {
			left = true
			break
		}
		q.reserveORDLocked(s)
		q.sent++
		q.mu.Unlock()
		ok, err := q.encode(&s.wr, s.seq)
		if err != nil {
			q.fail(err, 0)
			return
		}
		if !ok {
			q.mu.Lock()
			q.slotDone(s.seq, StatusLocalProtection, 0)
			q.mu.Unlock()
			q.fail(ErrLocalKey, 0)
			return
		}
		q.mu.Lock()
	}
	q.handed = q.sent
	q.mu.Unlock()
	var err error
	if block {
		err = q.txFlush()
	} else {
		err = q.txTryFlush()
	}
	if err != nil {
		q.mu.Lock()
		q.handed = from
		q.mu.Unlock()
		q.fail(&ConnError{err}, 0)
		return
	}
	if left || q.txPending() {
		q.wake()
	}
	if q.txPending() {
		// Not all handed yet: the transmit goroutine's pump completes
		// them after writing the rest.
		q.mu.Lock()
		q.handed = from
		q.mu.Unlock()
		return
	}
	q.mu.Lock()
	if q.state == StateRTS {
		for seq := from; seq < q.sent; seq++ {
			s := &q.sq[seq%uint64(len(q.sq))]
			switch s.wr.Op {
			case WRSend, WRSendWithInv, WRWrite, WRWriteWithImm:
				q.slotDone(seq, StatusSuccess, 0)
			}
		}
		q.completeLocked()
	}
	q.mu.Unlock()
}

// fpdus bounds how many FPDUs wr is sent as: txReserve keeps room for a
// full one before each.
func (q *QP) fpdus(wr *SendWR) int {
	switch wr.Op {
	case WRRead:
		return max(1, len(wr.SGL))
	case WRFetchAdd, WRCmpSwap:
		return 1
	}
	n := len(wr.Inline)
	for _, g := range wr.SGL {
		n += int(g.Len)
	}
	most := maxPayload(q.cfg.MaxFPDU, max(taggedHdrLen, untaggedHdrLen))
	return 2 + n/most // a last partial FPDU, and an Immediate
}

func (q *QP) reserveORDLocked(s *sqSlot) {
	push := func(e ordEntry) {
		q.ord[(q.ordH+q.ordN)%len(q.ord)] = e
		q.ordN++
	}
	switch s.wr.Op {
	case WRRead:
		if len(s.wr.SGL) == 0 {
			push(ordEntry{seq: s.seq, last: true})
		}
		for i, g := range s.wr.SGL {
			push(ordEntry{seq: s.seq, key: g.Key, to: g.Offset, left: g.Len, last: i == len(s.wr.SGL)-1})
		}
	case WRFetchAdd, WRCmpSwap:
		push(ordEntry{seq: s.seq, atomic: true, key: s.wr.SGL[0].Key, to: s.wr.SGL[0].Offset})
	}
}

// encode writes the messages of wr, the send request seq, into txbuf. ok
// is false when a local region went away after posting.
func (q *QP) encode(wr *SendWR, seq uint64) (ok bool, err error) {
	p := newPayload(wr.Inline, wr.SGL)
	switch wr.Op {
	case WRSend:
		op := OpSend
		if wr.Flags&Solicited != 0 {
			op = OpSendSE
		}
		return q.sendUntagged(op, 0, &p)
	case WRSendWithInv:
		op := OpSendInv
		if wr.Flags&Solicited != 0 {
			op = OpSendSEInv
		}
		return q.sendUntagged(op, wr.InvKey, &p)
	case WRWrite:
		return q.sendTagged(OpWrite, wr.RemoteKey, wr.RemoteOffset, &p)
	case WRWriteWithImm:
		if ok, err = q.sendTagged(OpWrite, wr.RemoteKey, wr.RemoteOffset, &p); !ok || err != nil {
			return ok, err
		}
		imm := wr.Imm
		return true, q.sendControl(OpImmediate, immediateLen, func(b []byte) {
			binary.BigEndian.PutUint32(b, imm)
			binary.BigEndian.PutUint32(b[4:], 0)
		})
	case WRRead:
		rr := readRequest{srcSTag: wr.RemoteKey, srcTO: wr.RemoteOffset}
		if len(wr.SGL) == 0 {
			return true, q.sendControl(OpReadRequest, readReqLen, rr.put)
		}
		for _, g := range wr.SGL {
			rr.sinkSTag, rr.sinkTO, rr.size = g.Key, g.Offset, g.Len
			if err := q.sendControl(OpReadRequest, readReqLen, rr.put); err != nil {
				return true, err
			}
			rr.srcTO += uint64(g.Len)
		}
		return true, nil
	default: // atomics
		ar := atomicRequest{aop: aopFetchAdd, id: uint32(seq), stag: wr.RemoteKey, to: wr.RemoteOffset,
			swapAdd: wr.CompareAdd, swapAddMask: ^uint64(0), compareMask: ^uint64(0)}
		if wr.Op == WRCmpSwap {
			ar.aop, ar.swapAdd, ar.compare = aopCmpSwap, wr.Swap, wr.CompareAdd
		}
		return true, q.sendControl(OpAtomicRequest, atomicReqLen, ar.put)
	}
}
