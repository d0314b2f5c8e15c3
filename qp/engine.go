package qp

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"time"
)

// lingerTime bounds how long a failed queue pair waits for its peer to
// close after sending it a Terminate.
const lingerTime = 2 * time.Second

// The protocol engine. Transmit: pumpLocked (under txMu) turns posted
// send requests into FPDUs in txbuf and writes them to the connection;
// the transmit goroutine (txLoop) does the same for responses, for
// requests a fence or the ORD limit held back, and for the Terminate.
// Receive: input is fed the bytes the connection delivers, in order and
// cut anywhere, and places them; over a ustack connection the worker
// feeds it right after TCP processing (workerPolled), over any other
// net.Conn readLoop does.

// maxPayload is the most bytes a segment with a header of hdr bytes
// carries in an FPDU of at most maxFPDU bytes.
func maxPayload(maxFPDU, hdr int) int { return maxFPDU - fpduOverhead - hdr }

// txReserve makes room for one FPDU in txbuf, writing out what is there
// if need be.
func (q *QP) txReserve() error {
	if len(q.txbuf)-q.txn >= q.cfg.MaxFPDU {
		return nil
	}
	return q.txFlush()
}

// txTryFlush writes what of txbuf the connection takes without waiting
// and keeps the rest, in order, for the next flush.
func (q *QP) txTryFlush() error {
	if q.txn == 0 {
		return nil
	}
	q.txSeal()
	n, err := q.tryWrite(q.txbuf[:q.txn])
	if n > 0 {
		q.txn = copy(q.txbuf, q.txbuf[n:q.txn])
		q.txSealed = q.txn
	}
	return err
}

// txSeal computes the CRCs of the FPDUs framed in txbuf since it last
// ran: at once, before they are written, for crcFPDUs to run three
// FPDUs' CRCs side by side.
func (q *QP) txSeal() {
	crcFPDUs(q.txbuf[q.txSealed:q.txn])
	q.txSealed = q.txn
}

// tryWriter is a connection that can write without waiting: ustack's TCP
// connections (stack's TryWrite).
type tryWriter interface {
	TryWrite(b []byte) (int, error)
}

// tryWrite writes what the connection takes of b without waiting:
// through TryWrite, or with non-blocking write(2)s on a kernel socket.
// Over another kind of connection it writes nothing (the transmit
// goroutine will). Caller holds txMu.
func (q *QP) tryWrite(b []byte) (int, error) {
	switch c := q.conn.(type) {
	case tryWriter:
		return c.TryWrite(b)
	case syscall.Conn:
		if q.raw == nil {
			rc, err := c.SyscallConn()
			if err != nil {
				return 0, nil
			}
			q.raw, q.rawWrite = rc, q.writeRaw
		}
		q.tw.b, q.tw.n, q.tw.err = b, 0, nil
		err := q.raw.Write(q.rawWrite)
		n, werr := q.tw.n, q.tw.err
		q.tw.b, q.tw.err = nil, nil
		if werr == nil {
			werr = err
		}
		return n, werr
	}
	return 0, nil
}

// writeRaw is tryWrite's write(2)s of q.tw.b on a kernel socket: as much
// as the socket takes now. Caller holds txMu.
func (q *QP) writeRaw(fd uintptr) bool {
	for q.tw.n < len(q.tw.b) {
		k, e := syscall.Write(int(fd), q.tw.b[q.tw.n:])
		if e == syscall.EINTR {
			continue
		}
		if e != nil {
			if e != syscall.EAGAIN {
				q.tw.err = e
			}
			break
		}
		q.tw.n += k
	}
	return true // never wait for room
}

// txFlush writes txbuf to the connection.
func (q *QP) txFlush() error {
	if q.txn == 0 {
		return nil
	}
	q.txSeal()
	_, err := q.conn.Write(q.txbuf[:q.txn])
	q.txn, q.txSealed = 0, 0
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
		if len(q.txbuf)-q.txn < q.cfg.MaxFPDU {
			q.fillUnlock() // txReserve writes to the network
		}
		if err := q.txReserve(); err != nil {
			q.fillUnlock()
			return true, err
		}
		n := min(left, most)
		b := q.txbuf[q.txn:]
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
	b := q.txbuf[q.txn:]
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
	// left their bytes in txbuf) or still to encode.
	from := q.handed
	q.mu.Unlock()
	left := false // requests left for the transmit goroutine
	for {
		q.mu.Lock()
		if q.state != StateRTS || q.sent == q.tail {
			q.mu.Unlock()
			break
		}
		s := &q.sq[q.sent%uint64(len(q.sq))]
		need := 0
		switch s.wr.Op {
		case WRRead:
			need = max(1, len(s.wr.SGL))
		case WRFetchAdd, WRCmpSwap:
			need = 1
		}
		if (s.wr.Flags&Fence != 0 && q.ordN > 0) || q.ordN+need > len(q.ord) {
			q.mu.Unlock()
			break
		}
		if !block && q.fpdus(&s.wr)*q.cfg.MaxFPDU > len(q.txbuf)-q.txn {
			q.mu.Unlock()
			left = true
			break
		}
		q.reserveORDLocked(s)
		q.sent++
		q.mu.Unlock()
		ok, err := q.encode(s)
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
	}
	q.mu.Lock()
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
	if left || q.txn > 0 {
		q.wake()
	}
	if q.txn > 0 {
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

// encode writes s's messages into txbuf. ok is false when a local region
// went away after posting.
func (q *QP) encode(s *sqSlot) (ok bool, err error) {
	wr := &s.wr
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
		ar := atomicRequest{aop: aopFetchAdd, id: uint32(s.seq), stag: wr.RemoteKey, to: wr.RemoteOffset,
			swapAdd: wr.CompareAdd, swapAddMask: ^uint64(0), compareMask: ^uint64(0)}
		if wr.Op == WRCmpSwap {
			ar.aop, ar.swapAdd, ar.compare = aopCmpSwap, wr.Swap, wr.CompareAdd
		}
		return true, q.sendControl(OpAtomicRequest, atomicReqLen, ar.put)
	}
}

// workerPolled is a transport that reads the stream itself and hands
// what it read to a consumer on its own goroutine: ustack's TCP
// connections, whose worker calls consume with the bytes, straight from
// its buffers and with the connection locked, right after the TCP
// processing that brought them, then consumed with it unlocked (stack's
// PollOnWorker). Neither may block; done is called once, when the stream
// ends.
type workerPolled interface {
	PollOnWorker(consume func([]byte), consumed func() (woke bool), done func(error)) error
}

// start attaches conn and starts the engine; the queue pair moves to RTS.
// Over a transport that reads for it (workerPolled) the engine's receive
// side runs there; otherwise a goroutine reads the connection.
func (q *QP) start(conn net.Conn) {
	wp, polled := conn.(workerPolled)
	polled = polled && !q.cfg.ReaderGoroutine
	q.mu.Lock()
	q.conn = conn
	q.state = StateRTS
	q.mu.Unlock()
	q.wg.Add(2)
	if polled && wp.PollOnWorker(q.consumeData, q.afterInput, q.readDone) != nil {
		polled = false
	}
	q.mu.Lock()
	q.polled = polled
	q.mu.Unlock()
	if !polled {
		if q.rbuf == nil {
			q.rbuf = make([]byte, 64<<10)
		}
		go q.readLoop()
	}
	go q.txLoop()
}

// readLoop feeds input from the connection until it fails.
func (q *QP) readLoop() {
	for {
		n, err := q.conn.Read(q.rbuf)
		if n > 0 {
			q.consumeData(q.rbuf[:n])
			q.afterInput()
		}
		if err != nil {
			q.readDone(err)
			return
		}
	}
}

// consumeData places bytes read from the connection: on the reader
// goroutine, or on ustack's worker with the connection locked (so it
// never writes to it).
func (q *QP) consumeData(b []byte) {
	if q.draining {
		return
	}
	if !q.fed {
		q.fed = true
		q.wakeMark = q.cqWakes()
	}
	if !q.input(b) {
		// Keep reading, and discard, until the peer closes: closing
		// with unread data would reset the connection and could destroy
		// the Terminate on its way to the peer.
		q.draining = true
	}
}

// afterInput sends the responses input queued and runs the OnInput
// handler, once per read that brought input (the failing one included):
// on the reader goroutine, or on ustack's worker with the connection
// unlocked. It reports whether input or the handler notified a channel an
// application goroutine may wait on (a CQ's Notify, Placed): ustack's
// worker then yields to it.
func (q *QP) afterInput() (woke bool) {
	if !q.fed {
		return false
	}
	q.fed = false
	if !q.draining {
		q.respondInline()
	}
	if h := q.cfg.OnInput; h != nil {
		q.inHandler.Store(true)
		h()
		q.inHandler.Store(false)
	}
	woke = q.placedWoke || q.cqWakes() != q.wakeMark
	q.placedWoke = false
	return woke
}

// cqWakes is the sum of the queue pair's CQs' wakes.
func (q *QP) cqWakes() uint64 {
	n := q.cfg.SendCQ.wakes.Load()
	if q.cfg.RecvCQ != q.cfg.SendCQ {
		n += q.cfg.RecvCQ.wakes.Load()
	}
	return n
}

// readDone ends the receive side once the stream has ended with err.
func (q *QP) readDone(err error) {
	defer q.wg.Done()
	q.fail(&ConnError{err}, 0)
	q.conn.Close()
}

// ConnError is a queue pair's error after its connection failed or
// closed.
type ConnError struct{ Err error }

func (e *ConnError) Error() string { return "qp: connection: " + e.Err.Error() }
func (e *ConnError) Unwrap() error { return e.Err }

// txLoop sends responses and held-back requests; once the queue pair is
// in Error it sends any Terminate, closes the connection and returns.
func (q *QP) txLoop() {
	defer q.wg.Done()
	for range q.kick {
		q.txMu.Lock()
		done := q.respond(true)
		if !done {
			q.pumpLocked(true)
		}
		q.txMu.Unlock()
		if done {
			// Half-close: the peer reads everything sent, the Terminate
			// included, then closes its end, which ends readLoop.
			conn := q.conn
			if cw, ok := conn.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
				conn.Close()
			}
			if q.polled {
				// No read to put a deadline on: the worker reads.
				time.AfterFunc(lingerTime, func() { conn.Close() })
			} else {
				conn.SetReadDeadline(time.Now().Add(lingerTime))
			}
			return
		}
	}
}

// respond sends queued responses; true once the queue pair is in Error
// and everything, a Terminate included, has been sent. Without block (on
// the engine's goroutine, respondInline) it encodes only the responses
// that fit in txbuf, leaves the rest and any Terminate to the transmit
// goroutine, and returns false.
func (q *QP) respond(block bool) bool {
	for {
		q.mu.Lock()
		if q.respN == 0 {
			st := q.state
			q.mu.Unlock()
			if block && st == StateError {
				q.txFlush()
				return true
			}
			return false
		}
		r := q.resp[q.respH]
		st := q.state
		if !block && (st != StateRTS || r.kind == respTerminate || q.respFPDUs(&r)*q.cfg.MaxFPDU > len(q.txbuf)-q.txn) {
			q.mu.Unlock()
			q.wake()
			return false
		}
		q.respH = (q.respH + 1) % len(q.resp)
		q.respN--
		q.mu.Unlock()
		var err error
		switch {
		case r.kind == respTerminate:
			c := r.term
			err = q.sendControl(OpTerminate, terminateLen, func(b []byte) { putTerminate(b, c) })
			if err == nil {
				err = q.txFlush()
			}
		case st == StateError:
			// A response after the queue pair failed is dropped.
		case r.kind == respRead:
			var ok bool
			ok, err = q.sendReadResponse(r.rr)
			if !ok {
				q.fail(terminateError(termInvalidSTag, true), termInvalidSTag)
			}
		case r.kind == respAtomic:
			id, orig := r.id, r.orig
			err = q.sendControl(OpAtomicResp, atomicRespLen, func(b []byte) {
				binary.BigEndian.PutUint32(b, id)
				binary.BigEndian.PutUint64(b[4:], orig)
			})
		}
		if err != nil {
			q.fail(&ConnError{err}, 0)
			return true
		}
	}
}

// respFPDUs bounds how many FPDUs a response is sent as.
func (q *QP) respFPDUs(r *response) int {
	if r.kind != respRead {
		return 1
	}
	return 1 + int(r.rr.size)/maxPayload(q.cfg.MaxFPDU, taggedHdrLen)
}

// respondInline sends, on the engine's goroutine, the responses input
// has queued (Read Responses, atomic responses), without waiting for the
// transport: what the connection does not take at once, and any response
// too large for txbuf, the transmit goroutine sends.
func (q *QP) respondInline() {
	q.mu.Lock()
	n := q.respN
	q.mu.Unlock()
	if n == 0 {
		return
	}
	if !q.txMu.TryLock() {
		q.wake() // busy transmitting: the transmit goroutine takes them
		return
	}
	defer q.txMu.Unlock()
	q.respond(false)
	if err := q.txTryFlush(); err != nil {
		q.fail(&ConnError{err}, 0)
	} else if q.txn > 0 {
		q.wake()
	}
}

// sendReadResponse answers a validated Read Request; false if the source
// region was deregistered meanwhile.
func (q *QP) sendReadResponse(rr readRequest) (bool, error) {
	sge := [1]SGE{{Offset: rr.srcTO, Len: rr.size, Key: rr.srcSTag}}
	p := newPayload(nil, sge[:])
	if rr.size == 0 {
		p = newPayload(nil, nil)
	}
	return q.sendTagged(OpReadResponse, rr.sinkSTag, rr.sinkTO, &p)
}

// input processes bytes from the stream, in order, cut at any boundary.
// It returns false once the queue pair has failed: the rest of the
// stream is ignored.
func (q *QP) input(p []byte) bool {
	if q.State() == StateError {
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
	select {
	case q.placed <- struct{}{}:
		q.placedWoke = true
	default:
	}
	return !q.failed
}

// protoFail ends the connection because the peer broke the protocol.
func (q *QP) protoFail(err error, c termCode) {
	q.failed = true
	q.fail(terminateError(c, true), c)
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
	s, err := parseSegment(u)
	if err != nil {
		var he *errHeader
		errors.As(err, &he)
		q.protoFail(err, he.term)
		return
	}
	if s.tagged {
		if s.op == OpWrite {
			q.placeWrite(&s)
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

// placeWrite lands an RDMA Write. A zero-length Write touches no memory
// and is not checked.
func (q *QP) placeWrite(s *segment) {
	if len(s.data) == 0 {
		return
	}
	mr, c, ok := q.dev.lookup(s.stag, q.pd, RemoteWrite, s.to, uint64(len(s.data)))
	if !ok {
		q.protoFail(nil, c)
		return
	}
	copy(mr.buf[s.to:], s.data)
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
	mrs := *q.dev.mrs.Load()
	idx := key >> 8
	if idx == 0 || idx >= uint32(len(mrs)) {
		return false
	}
	mr := mrs[idx]
	if mr == nil || mr.key != key || mr.pd != q.pd || mr.access&remoteRights == 0 {
		return false
	}
	mr.mu.Lock()
	ok := mr.valid && !mr.invalidated
	mr.invalidated = true
	mr.mu.Unlock()
	return ok
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

// queueResponse hands a response to the transmit goroutine.
func (q *QP) queueResponse(r response) bool {
	q.mu.Lock()
	if q.respN == len(q.resp)-1 { // one slot stays free for a Terminate
		q.mu.Unlock()
		return false
	}
	q.resp[(q.respH+q.respN)%len(q.resp)] = r
	q.respN++
	q.mu.Unlock()
	return true // consume sends it (respondInline)
}

func (q *QP) recvReadRequest(s *segment) {
	rr, ok := parseReadRequest(s.data)
	if !ok {
		q.protoFail(nil, termRemoteOp)
		return
	}
	if rr.size > 0 {
		mr, c, ok := q.dev.lookup(rr.srcSTag, q.pd, RemoteRead, rr.srcTO, uint64(rr.size))
		if !ok {
			q.protoFail(nil, c)
			return
		}
		mr.mu.RUnlock()
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
