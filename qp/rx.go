package qp

import (
	"encoding/binary"
	"errors"
)

// Placement in: input is fed the bytes the connection delivers, in
// order and cut at any boundary; it reassembles FPDUs (staging a partial
// one), checks them (handle: CRC, lengths, queue numbers, message
// sequence and offsets) and places each segment directly into
// registered memory: a Write where its STag and offset say, a Read
// Response where the oldest outstanding Read asked for it, a Send into
// the current receive request. Requests from the peer (Read, atomics)
// are validated here and queued for respond.go. Anything the peer gets
// wrong ends the connection with a Terminate (protoFail).

// input processes bytes from the stream, in order, cut at any boundary.
// It returns false once the queue pair has failed: the rest of the
// stream is ignored.
func (q *QP) input(p []byte) bool {
	if q.errored.Load() {
		q.failed = true
	}
	for len(p) > 0 && !q.failed {
		if q.stageN == 0 && len(p) >= fpduLenLen {
			n := int(binary.BigEndian.Uint16(p))
			if n < minHdrLen {
				q.protoFail(errBadLength, termMPABadLength)
				return false
			}
			total := fpduLen(n)
			if len(p) >= total {
				if k := q.handle3(p, total); k > 0 {
					p = p[k:]
					continue
				}
				q.handle(p[:total])
				p = p[total:]
				continue
			}
		}
		// Gather a partial FPDU in stage.
		if q.stageN < fpduLenLen {
			k := copy(q.stage[q.stageN:fpduLenLen], p)
			q.stageN += k
			p = p[k:]
			if q.stageN < fpduLenLen {
				return true
			}
			if int(binary.BigEndian.Uint16(q.stage)) < minHdrLen {
				q.protoFail(errBadLength, termMPABadLength)
				return false
			}
		}
		total := fpduLen(int(binary.BigEndian.Uint16(q.stage)))
		k := copy(q.stage[q.stageN:total], p)
		q.stageN += k
		p = p[k:]
		if q.stageN == total {
			q.stageN = 0
			q.handle(q.stage[:total])
		}
	}
	if len(q.placed) == 0 { // else a notification is pending, which stands for this one too
		select {
		case q.placed <- struct{}{}:
			q.placedWoke = true
		default:
		}
	}
	return !q.failed
}

// protoFail ends the connection because the peer broke the protocol.
func (q *QP) protoFail(err error, c termCode) {
	q.failed = true
	q.fail(terminateError(c, true), c)
}

// handle3 processes the three complete FPDUs at the front of p, the first
// of total bytes, with their CRCs checked together (crc32c3: three
// chains of the CRC32 instruction, as the sender computes them), and
// returns their length; 0, having done nothing, unless p holds three
// whole FPDUs of at least crc3Min bytes whose CRCs are all good (handle
// then checks them one at a time, and reports a bad one). Only where
// there is no fold: a fold checks one FPDU at twice crc32c3's rate.
func (q *QP) handle3(p []byte, total int) int {
	if haveFold || !haveCRC3 || total < crc3Min {
		return 0
	}
	var f [3][]byte
	f[0], p = p[:total], p[total:]
	k := total
	for i := 1; i < 3; i++ {
		if len(p) < fpduLenLen {
			return 0
		}
		n := int(binary.BigEndian.Uint16(p))
		l := fpduLen(n)
		if n < minHdrLen || l < crc3Min || len(p) < l {
			return 0
		}
		f[i], p = p[:l], p[l:]
		k += l
	}
	if !crcOK3(f[0], f[1], f[2]) {
		return 0
	}
	for i := range f {
		if q.failed {
			break
		}
		n := int(binary.BigEndian.Uint16(f[i]))
		q.handleULPDU(f[i][fpduLenLen : fpduLenLen+n])
	}
	return k
}

// handle processes one complete FPDU.
func (q *QP) handle(f []byte) {
	u, err := checkFPDU(f)
	if err != nil {
		c := termMPABadLength
		if errors.Is(err, errBadCRC) {
			c = termMPACRC
		}
		q.protoFail(err, c)
		return
	}
	q.handleULPDU(u)
}

// handleULPDU processes the ULPDU of an FPDU whose CRC is good.
func (q *QP) handleULPDU(u []byte) {
	if len(u) >= taggedHdrLen && u[0]&^ddpLast == ddpTagged|ddpVersion && u[1] == rdmapVer<<6|byte(OpWrite) {
		// A Write segment with its reserved bits clear, the most common
		// kind, taken as parseSegment would, without decoding the rest.
		q.placeWrite(binary.BigEndian.Uint32(u[2:]), binary.BigEndian.Uint64(u[6:]), u[taggedHdrLen:])
		return
	}
	s, err := parseSegment(u)
	if err != nil {
		var he *errHeader
		errors.As(err, &he)
		q.protoFail(err, he.term)
		return
	}
	if s.tagged {
		if s.op == OpWrite {
			q.placeWrite(s.stag, s.to, s.data)
		} else {
			q.placeReadResponse(&s)
		}
		return
	}
	if s.qn >= numQN || s.op.queue() != s.qn {
		q.protoFail(nil, termDDPBadQN)
		return
	}
	if q.inMsg[s.qn] {
		if s.msn != q.msnIn[s.qn]+1 || s.mo != q.moIn[s.qn] {
			q.protoFail(nil, termDDPBadMO)
			return
		}
	} else if s.msn != q.msnIn[s.qn]+1 {
		q.protoFail(nil, termDDPBadMSN)
		return
	} else if s.mo != 0 {
		q.protoFail(nil, termDDPBadMO)
		return
	}
	multi := s.op == OpSend || s.op == OpSendInv || s.op == OpSendSE || s.op == OpSendSEInv
	if !multi && !s.last {
		q.protoFail(nil, termRDMAPOpcode)
		return
	}
	if s.last {
		q.inMsg[s.qn] = false
		q.msnIn[s.qn] = s.msn
	} else {
		q.inMsg[s.qn] = true
		q.moIn[s.qn] = s.mo + uint32(len(s.data))
	}
	switch s.op {
	case OpSend, OpSendInv, OpSendSE, OpSendSEInv:
		q.placeSend(&s)
	case OpImmediate, OpImmediateSE:
		q.recvImmediate(&s)
	case OpReadRequest:
		q.recvReadRequest(&s)
	case OpAtomicRequest:
		q.recvAtomicRequest(&s)
	case OpAtomicResp:
		q.recvAtomicResponse(&s)
	case OpTerminate:
		q.recvTerminate(&s)
	default:
		q.protoFail(nil, termRDMAPOpcode)
	}
}

// placeWrite lands a segment of an RDMA Write, data at to in the region
// stag. A zero-length Write touches no memory and is not checked.
func (q *QP) placeWrite(stag uint32, to uint64, data []byte) {
	if len(data) == 0 {
		return
	}
	mr, c, ok := q.dev.lookup(stag, q.pd, RemoteWrite, to, uint64(len(data)))
	if !ok {
		q.protoFail(nil, c)
		return
	}
	copy(mr.buf[to:], data)
	mr.mu.RUnlock()
}

// placeReadResponse lands a Read Response: it must continue the oldest
// outstanding Read Request exactly, so a peer can only write where this
// end asked it to.
func (q *QP) placeReadResponse(s *segment) {
	q.mu.Lock()
	if q.ordN == 0 || q.ord[q.ordH].atomic {
		q.mu.Unlock()
		q.protoFail(nil, termRDMAPOpcode)
		return
	}
	e := q.ord[q.ordH]
	q.mu.Unlock()
	n := uint32(len(s.data))
	if s.stag != e.key && n > 0 || s.to != e.to || n > e.left || (s.last != (n == e.left)) {
		q.protoFail(nil, termBounds)
		return
	}
	if n > 0 {
		mr, _, ok := q.dev.lookup(e.key, q.pd, LocalWrite, s.to, uint64(n))
		if !ok {
			q.mu.Lock()
			q.slotDone(e.seq, StatusLocalProtection, 0)
			q.mu.Unlock()
			q.protoFail(nil, termCatastrophic)
			return
		}
		copy(mr.buf[s.to:], s.data)
		mr.mu.RUnlock()
	}
	q.mu.Lock()
	if q.state != StateRTS {
		q.mu.Unlock()
		return
	}
	h := &q.ord[q.ordH]
	h.to += uint64(n)
	h.left -= n
	q.sq[e.seq%uint64(len(q.sq))].len += n
	if s.last {
		q.ordH = (q.ordH + 1) % len(q.ord)
		q.ordN--
		if e.last {
			q.slotDone(e.seq, StatusSuccess, q.sq[e.seq%uint64(len(q.sq))].len)
			q.completeLocked()
		}
	}
	q.mu.Unlock()
	if s.last {
		q.wake() // a fence or the ORD limit may have held requests back
	}
}

// placeSend lands a segment of a Send in the current receive request,
// taking the next one at a message's first segment.
func (q *QP) placeSend(s *segment) {
	if s.mo == 0 {
		if !q.rq.take(&q.cur) {
			// A Send with no posted receive is fatal to the connection.
			q.protoFail(nil, termDDPNoBuffer)
			return
		}
	}
	var capacity uint64
	for _, g := range q.cur.sgl {
		capacity += uint64(g.Len)
	}
	end := uint64(s.mo) + uint64(len(s.data))
	if end > capacity {
		q.cfg.RecvCQ.push(WC{ID: q.cur.id, Status: StatusLocalLength, Op: WCRecv, QPN: q.num})
		q.protoFail(nil, termDDPTooLong)
		return
	}
	// Scatter s.data at s.mo.
	skip, data := uint64(s.mo), s.data
	for _, g := range q.cur.sgl {
		if len(data) == 0 {
			break
		}
		if skip >= uint64(g.Len) {
			skip -= uint64(g.Len)
			continue
		}
		n := min(uint64(len(data)), uint64(g.Len)-skip)
		mr, _, ok := q.dev.lookup(g.Key, q.pd, LocalWrite, g.Offset+skip, n)
		if !ok {
			q.cfg.RecvCQ.push(WC{ID: q.cur.id, Status: StatusLocalProtection, Op: WCRecv, QPN: q.num})
			q.protoFail(nil, termCatastrophic)
			return
		}
		copy(mr.buf[g.Offset+skip:], data[:n])
		mr.mu.RUnlock()
		data = data[n:]
		skip = 0
	}
	if !s.last {
		return
	}
	wc := WC{ID: q.cur.id, Op: WCRecv, Len: uint32(end), QPN: q.num}
	if s.op == OpSendInv || s.op == OpSendSEInv {
		if !q.invalidate(s.stag) {
			q.protoFail(nil, termCannotInv)
			return
		}
		wc.Flags, wc.InvKey = WCWithInv, s.stag
	}
	q.pushRecv(wc)
}

// invalidate ends remote access to this domain's region key.
func (q *QP) invalidate(key uint32) bool {
	mr := q.dev.find(key)
	if mr == nil || mr.pd != q.pd || mr.access&remoteRights == 0 {
		return false
	}
	mr.mu.Lock()
	f := mr.revoked.Load()
	mr.revoked.Store(f | mrInvalidated)
	mr.mu.Unlock()
	return f == 0
}

func (q *QP) pushRecv(wc WC) {
	if !q.cfg.RecvCQ.push(wc) {
		q.failed = true
		q.fail(ErrCQOverflow, termCatastrophic)
	}
}

// recvImmediate completes the receive an RDMA Write with immediate
// consumes (RFC 7306 Immediate Data after the Write).
func (q *QP) recvImmediate(s *segment) {
	if len(s.data) != immediateLen {
		q.protoFail(nil, termRemoteOp)
		return
	}
	if !q.rq.take(&q.cur) {
		q.protoFail(nil, termDDPNoBuffer)
		return
	}
	q.pushRecv(WC{ID: q.cur.id, Op: WCRecvWithImm, Flags: WCWithImm,
		Imm: binary.BigEndian.Uint32(s.data), QPN: q.num})
}

func (q *QP) recvReadRequest(s *segment) {
	rr, ok := parseReadRequest(s.data)
	if !ok {
		q.protoFail(nil, termRemoteOp)
		return
	}
	if rr.size > 0 {
		// Checked now, read when the response is sent (fill).
		if c, ok := q.dev.probe(rr.srcSTag, q.pd, RemoteRead, rr.srcTO, uint64(rr.size)); !ok {
			q.protoFail(nil, c)
			return
		}
	}
	if !q.queueResponse(response{kind: respRead, rr: rr}) {
		q.protoFail(nil, termRemoteOp) // more Reads than IRD
	}
}

func (q *QP) recvAtomicRequest(s *segment) {
	ar, ok := parseAtomicRequest(s.data)
	if !ok {
		q.protoFail(nil, termRemoteOp)
		return
	}
	if ar.to%8 != 0 {
		q.protoFail(nil, termBounds)
		return
	}
	mr, c, ok := q.dev.lookup(ar.stag, q.pd, RemoteAtomic, ar.to, 8)
	if !ok {
		q.protoFail(nil, c)
		return
	}
	w := mr.buf[ar.to : ar.to+8]
	q.dev.atomicMu.Lock()
	orig := binary.NativeEndian.Uint64(w)
	switch ar.aop {
	case aopFetchAdd:
		binary.NativeEndian.PutUint64(w, orig+ar.swapAdd)
	case aopCmpSwap:
		if orig&ar.compareMask == ar.compare&ar.compareMask {
			binary.NativeEndian.PutUint64(w, orig&^ar.swapAddMask|ar.swapAdd&ar.swapAddMask)
		}
	}
	q.dev.atomicMu.Unlock()
	mr.mu.RUnlock()
	if !q.queueResponse(response{kind: respAtomic, id: ar.id, orig: orig}) {
		q.protoFail(nil, termRemoteOp)
	}
}

func (q *QP) recvAtomicResponse(s *segment) {
	if len(s.data) != atomicRespLen {
		q.protoFail(nil, termRemoteOp)
		return
	}
	id := binary.BigEndian.Uint32(s.data)
	q.mu.Lock()
	if q.ordN == 0 || !q.ord[q.ordH].atomic || uint32(q.ord[q.ordH].seq) != id {
		q.mu.Unlock()
		q.protoFail(nil, termRDMAPOpcode)
		return
	}
	e := q.ord[q.ordH]
	q.mu.Unlock()
	mr, _, ok := q.dev.lookup(e.key, q.pd, LocalWrite, e.to, 8)
	if !ok {
		q.mu.Lock()
		q.slotDone(e.seq, StatusLocalProtection, 0)
		q.mu.Unlock()
		q.protoFail(nil, termCatastrophic)
		return
	}
	binary.NativeEndian.PutUint64(mr.buf[e.to:], binary.BigEndian.Uint64(s.data[4:]))
	mr.mu.RUnlock()
	q.mu.Lock()
	if q.state == StateRTS {
		q.ordH = (q.ordH + 1) % len(q.ord)
		q.ordN--
		q.slotDone(e.seq, StatusSuccess, 8)
		q.completeLocked()
	}
	q.mu.Unlock()
	q.wake()
}

// recvTerminate: the peer ended the connection. The oldest Read or atomic
// outstanding, the request the peer was answering, completes with a
// remote status; everything after it is flushed.
func (q *QP) recvTerminate(s *segment) {
	if len(s.data) < terminateLen {
		q.failed = true
		q.fail(terminateError(termRemoteOp, false), 0)
		return
	}
	c := termCode(binary.BigEndian.Uint16(s.data))
	st := StatusRemoteOp
	if c.remoteAccess() {
		st = StatusRemoteAccess
	}
	q.mu.Lock()
	if q.ordN > 0 {
		q.slotDone(q.ord[q.ordH].seq, st, 0)
	}
	q.mu.Unlock()
	q.failed = true
	q.fail(terminateError(c, false), 0)
}
