package qp

import "encoding/binary"

// Responses: the answers to the peer's Read and atomic requests, queued
// by input (queueResponse) and sent either inline, on the goroutine that
// ran input, when they fit in the transmit buffer without waiting
// (respondInline), or by the transmit goroutine (respond(true)), which
// also sends the Terminate once the queue pair has failed.

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
		if !block && (st != StateRTS || r.kind == respTerminate || !q.txFits(q.respFPDUs(&r)*q.cfg.MaxFPDU)) {
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
	if !q.respQueued {
		return
	}
	q.respQueued = false
	if !q.txMu.TryLock() {
		q.wake() // busy transmitting: the transmit goroutine takes them
		return
	}
	defer q.txMu.Unlock()
	q.respond(false)
	if err := q.txTryFlush(); err != nil {
		q.fail(&ConnError{err}, 0)
	} else if q.txPending() {
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

// queueResponse queues a response for respondInline, or the transmit
// goroutine, to send. Only input calls it.
func (q *QP) queueResponse(r response) bool {
	q.mu.Lock()
	if q.respN == len(q.resp)-1 { // one slot stays free for a Terminate
		q.mu.Unlock()
		return false
	}
	q.resp[(q.respH+q.respN)%len(q.resp)] = r
	q.respN++
	q.mu.Unlock()
	q.respQueued = true
	return true // consume sends it (respondInline)
}
