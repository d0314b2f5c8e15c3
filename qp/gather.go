package qp

import (
	"encoding/binary"
	"hash/crc32"
	"syscall"
)

// Gathered transmission. Over a kernel socket a large message is not
// copied into txbuf: its FPDUs' headers and CRCs go into gbuf, their
// payloads stay in the registered region, and flushGathered writes
// everything pending (txbuf's bytes first, then the gathered FPDUs of
// every message encoded since, a posted list of Writes together) with
// one writev(2), which the kernel copies from once. The write never
// waits: what the socket does not take at once is copied into txbuf, as
// the rest of the transmit path would have had it, and the regions'
// locks are let go. A region is read-locked from its message's encoding
// to that flush, never while the engine waits for the transport.
//
// Anything else written into txbuf (a small message, a control message)
// first flushes what is gathered, so that the stream keeps its order.

const (
	// gatherMin is the smallest payload sent gathered: below it the
	// copy costs less than the extra vectors.
	gatherMin = 16 << 10
	// gatherFPDUs is the most FPDUs one writev carries (about 270 KiB
	// at the default MaxFPDU): two vectors each, below IOV_MAX (1,024).
	gatherFPDUs = 192
	// gatherMRs is the most regions a gathered write reads from.
	gatherMRs = 4
)

// gathered is one FPDU of a gathered write: its header (ULPDU_Length
// included) and trailer (pad, CRC) in gbuf, its payload in a region.
type gathered struct {
	hdr, trailer int // offsets in gbuf
	hdrLen, pad  int
	payload      []byte
}

// gatherState is what the transmit path (under txMu) has gathered and
// not yet written.
type gatherState struct {
	buf   []byte     // the FPDUs' headers and trailers
	fpdus []gathered // cap gatherFPDUs
	bytes int        // the FPDUs' length on the wire
	held  [gatherMRs]*MR
	nheld int
	iov   [][]byte
	w     gatherWrite
}

// canGather reports whether p is sent gathered: a payload of at least
// gatherMin bytes in one registered region, over a kernel socket.
func (q *QP) canGather(p *payload) bool {
	return haveWritev && p.inline == nil && len(p.sgl) == 1 && p.total >= gatherMin && q.rawConn() != nil
}

// rawConn returns the kernel socket under the connection, or nil.
func (q *QP) rawConn() syscall.RawConn {
	if q.raw == nil {
		if c, ok := q.conn.(syscall.Conn); ok {
			if rc, err := c.SyscallConn(); err == nil {
				q.raw = rc
			}
		}
	}
	return q.raw
}

// hold returns the bytes g names, in a region read-locked until the next
// flushGathered (each region is locked once however many messages read
// it); false if the region went away after posting.
func (q *QP) hold(g SGE) ([]byte, bool, error) {
	gs := &q.gs
	for _, mr := range gs.held[:gs.nheld] {
		if mr.key == g.Key {
			if _, ok := mr.check(q.pd, 0, g.Offset, uint64(g.Len)); !ok {
				return nil, false, nil
			}
			return mr.buf[g.Offset : g.Offset+uint64(g.Len)], true, nil
		}
	}
	if gs.nheld == len(gs.held) {
		if err := q.flushGathered(); err != nil {
			return nil, true, err
		}
	}
	mr, _, ok := q.dev.lookup(g.Key, q.pd, 0, g.Offset, uint64(g.Len))
	if !ok {
		return nil, false, nil
	}
	gs.held[gs.nheld] = mr
	gs.nheld++
	return mr.buf[g.Offset : g.Offset+uint64(g.Len)], true, nil
}

// sendGathered gathers a message whose payload p is one region's slice.
// ok is false when the region went away after posting.
func (q *QP) sendGathered(h *segHdr, p *payload) (ok bool, err error) {
	gs := &q.gs
	if gs.buf == nil {
		gs.buf = make([]byte, 0, gatherFPDUs*(fpduLenLen+untaggedHdrLen+3+crcLen)+8)
		gs.fpdus = make([]gathered, 0, gatherFPDUs)
		gs.iov = make([][]byte, 0, 2*gatherFPDUs+2)
		gs.w.buf = make([]iovec, 0, 2*gatherFPDUs+2)
		gs.w.fn = gs.w.write
	}
	g := p.sgl[0]
	src, ok, err := q.hold(g)
	if !ok || err != nil {
		return ok, err
	}
	most := maxPayload(q.cfg.MaxFPDU, h.len())
	for len(src) > 0 {
		n := min(len(src), most)
		l := fpduLen(h.len() + n)
		// What the socket may leave is copied after txbuf's bytes: keep
		// room for it. (A non-blocking pump made room for the message
		// before encoding it: it never needs the blocking flush.)
		if len(gs.fpdus) == cap(gs.fpdus) || len(q.txbuf)-q.txn-gs.bytes < l {
			if err := q.flushGathered(); err != nil {
				return true, err
			}
			if q.txBlock && len(q.txbuf)-q.txn < len(q.txbuf)/2 {
				if err := q.txFlush(); err != nil {
					return true, err
				}
			}
			done := uint32(g.Len) - uint32(len(src))
			if src, ok, err = q.hold(SGE{Offset: g.Offset + uint64(done), Len: g.Len - done, Key: g.Key}); !ok || err != nil {
				return ok, err
			}
		}
		b := gs.buf
		f := gathered{hdr: len(b)}
		b = b[:f.hdr+fpduLenLen+h.len()]
		f.hdrLen = fpduLenLen + h.put(b[f.hdr+fpduLenLen:], n == len(src), n)
		binary.BigEndian.PutUint16(b[f.hdr:], uint16(f.hdrLen-fpduLenLen+n))
		f.pad = padLen(f.hdrLen - fpduLenLen + n)
		f.payload = src[:n]
		f.trailer = len(b)
		b = b[:f.trailer+f.pad+crcLen]
		clear(b[f.trailer : f.trailer+f.pad])
		gs.buf = b
		gs.fpdus = append(gs.fpdus, f)
		gs.bytes += l
		src = src[n:]
	}
	return true, nil
}

// flushGathered computes the gathered FPDUs' CRCs, writes txbuf's bytes
// and them without waiting, keeps in txbuf what the socket did not take,
// and lets the regions go.
func (q *QP) flushGathered() error {
	gs := &q.gs
	if len(gs.fpdus) == 0 {
		return nil
	}
	defer q.releaseGathered()
	gatherCRCs(gs.buf, gs.fpdus)
	q.txSeal()
	// The vectors: txbuf's bytes, then header, payload, trailer and next
	// header (adjacent in gbuf), …, the last trailer.
	iov := gs.iov[:0]
	if q.txn > 0 {
		iov = append(iov, q.txbuf[:q.txn])
	}
	at := 0
	for i := range gs.fpdus {
		f := &gs.fpdus[i]
		iov = append(iov, gs.buf[at:f.hdr+f.hdrLen], f.payload)
		at = f.trailer
	}
	iov = append(iov, gs.buf[at:])
	gs.iov = iov[:0]
	return q.writeGathered(iov)
}

// releaseGathered drops what is gathered and unlocks the regions.
func (q *QP) releaseGathered() {
	gs := &q.gs
	for i, mr := range gs.held[:gs.nheld] {
		mr.mu.RUnlock()
		gs.held[i] = nil
	}
	gs.nheld = 0
	clear(gs.fpdus) // no payload slices kept past the regions' locks
	gs.buf, gs.fpdus, gs.bytes = gs.buf[:0], gs.fpdus[:0], 0
}

// gatherCRCs computes the CRC of each FPDU of fs, three at a time, and
// writes it into its trailer in gb.
func gatherCRCs(gb []byte, fs []gathered) {
	for len(fs) > 0 {
		a, b, c := &fs[0], &fs[0], &fs[0]
		switch len(fs) {
		case 1:
		case 2:
			b, c = &fs[1], &fs[1]
		default:
			b, c = &fs[1], &fs[2]
		}
		ca, cb, cc := checksum3From(
			crc32.Checksum(gb[a.hdr:a.hdr+a.hdrLen], castagnoli),
			crc32.Checksum(gb[b.hdr:b.hdr+b.hdrLen], castagnoli),
			crc32.Checksum(gb[c.hdr:c.hdr+c.hdrLen], castagnoli),
			a.payload, b.payload, c.payload)
		a.seal(gb, ca)
		b.seal(gb, cb)
		c.seal(gb, cc)
		fs = fs[min(3, len(fs)):]
	}
}

// seal finishes the FPDU's CRC, given it up to the end of the payload,
// over the pad and writes it into the trailer.
func (f *gathered) seal(gb []byte, crc uint32) {
	t := gb[f.trailer : f.trailer+f.pad+crcLen]
	binary.LittleEndian.PutUint32(t[f.pad:], crc32.Update(crc, castagnoli, t[:f.pad]))
}

// gatherWrite is a gathered write in progress: the state of the
// function the socket's RawConn.Write calls, made once per queue pair so
// that no closure is allocated per write.
type gatherWrite struct {
	iov      [][]byte
	total, n int
	err      error
	buf      []iovec
	fn       func(fd uintptr) bool
}

// write writes the vectors with non-blocking writev(2)s until the socket
// takes no more.
func (w *gatherWrite) write(fd uintptr) bool {
	for w.n < w.total {
		k, e := writev(fd, w.iov, w.n, w.buf[:0])
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			if e != syscall.EAGAIN {
				w.err = e
			}
			break
		}
		if k == 0 {
			break
		}
		w.n += k
	}
	return true // never wait for room
}

// writeGathered writes iov with non-blocking writev(2)s and copies what
// the socket did not take into txbuf. Its first vector may be txbuf's
// own bytes.
func (q *QP) writeGathered(iov [][]byte) error {
	w := &q.gs.w
	w.iov, w.total, w.n, w.err = iov, 0, 0, nil
	for _, v := range iov {
		w.total += len(v)
	}
	err := q.raw.Write(w.fn)
	n, total := w.n, w.total
	if w.err != nil {
		err = w.err
	}
	w.iov = nil
	if err != nil {
		return err
	}
	q.gathers.Add(1)
	if n < total {
		q.gatherRest.Add(1)
	}
	// Keep the rest, in order: txbuf's own first (copy moves within it).
	rest := 0
	for _, v := range iov {
		if n >= len(v) {
			n -= len(v)
			continue
		}
		rest += copy(q.txbuf[rest:], v[n:])
		n = 0
	}
	q.txn, q.txSealed = rest, rest
	return nil
}
