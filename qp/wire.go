package qp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The iWARP wire format: MPA (RFC 5044) frames DDP (RFC 5041) segments,
// which carry RDMAP (RFC 5040, RFC 7306) messages.

// MPA connection setup.
const (
	mpaKeyLen    = 16
	mpaHeaderLen = mpaKeyLen + 4 // key, flags, revision, PD_Length
	// MaxPrivateData is the most private data a connect, accept or reject
	// carries. RFC 5044 allows 512 bytes; ustack keeps to 256, what most
	// RDMA connection managers accept.
	MaxPrivateData = 256
	mpaRevision    = 1

	mpaFlagMarkers = 0x80
	mpaFlagCRC     = 0x40
	mpaFlagReject  = 0x20
)

var (
	mpaKeyReq = [mpaKeyLen]byte([]byte("MPA ID Req Frame"))
	mpaKeyRep = [mpaKeyLen]byte([]byte("MPA ID Rep Frame"))
)

// mpaFrame is an MPA request or reply.
type mpaFrame struct {
	reply       bool
	markers     bool
	crc         bool
	reject      bool
	rev         uint8
	privateData []byte
}

// appendMPA appends f's encoding to b.
func appendMPA(b []byte, f mpaFrame) []byte {
	if f.reply {
		b = append(b, mpaKeyRep[:]...)
	} else {
		b = append(b, mpaKeyReq[:]...)
	}
	var flags byte
	if f.markers {
		flags |= mpaFlagMarkers
	}
	if f.crc {
		flags |= mpaFlagCRC
	}
	if f.reject {
		flags |= mpaFlagReject
	}
	b = append(b, flags, f.rev)
	b = binary.BigEndian.AppendUint16(b, uint16(len(f.privateData)))
	return append(b, f.privateData...)
}

// parseMPAHeader checks the fixed 20-byte header of an MPA frame and
// returns it with its private-data length. The private data follows.
func parseMPAHeader(h []byte, wantReply bool) (mpaFrame, int, error) {
	if len(h) < mpaHeaderLen {
		return mpaFrame{}, 0, fmt.Errorf("%w: %d-byte header, want %d", ErrMPA, len(h), mpaHeaderLen)
	}
	key := [mpaKeyLen]byte(h[:mpaKeyLen])
	var f mpaFrame
	switch {
	case key == mpaKeyReq && !wantReply:
	case key == mpaKeyRep && wantReply:
		f.reply = true
	default:
		return mpaFrame{}, 0, fmt.Errorf("%w: key %q", ErrMPA, h[:mpaKeyLen])
	}
	flags := h[16]
	f.markers = flags&mpaFlagMarkers != 0
	f.crc = flags&mpaFlagCRC != 0
	f.reject = flags&mpaFlagReject != 0
	f.rev = h[17]
	n := int(binary.BigEndian.Uint16(h[18:20]))
	if f.reject && !wantReply {
		return mpaFrame{}, 0, fmt.Errorf("%w: reject flag in a request", ErrMPA)
	}
	if f.rev != mpaRevision {
		return mpaFrame{}, 0, fmt.Errorf("%w: revision %d, want %d", ErrMPA, f.rev, mpaRevision)
	}
	if n > MaxPrivateData {
		return mpaFrame{}, 0, fmt.Errorf("%w: %d bytes of private data, at most %d", ErrMPA, n, MaxPrivateData)
	}
	return f, n, nil
}

// FPDU framing. An FPDU is ULPDU_Length (u16, big-endian) | ULPDU (the
// DDP segment) | pad to a multiple of 4 | CRC32c of all that. The CRC
// goes on the wire least significant byte first: the byte order of the
// reflected CRC register, which deployed stacks (Linux siw, Chelsio) send
// and Wireshark's iwarp_mpa dissector checks.
const (
	fpduLenLen = 2
	crcLen     = 4
	// fpduOverhead is the most framing bytes an FPDU adds to its ULPDU.
	fpduOverhead = fpduLenLen + 3 + crcLen
	// maxULPDU is the largest ULPDU ULPDU_Length can describe.
	maxULPDU = 0xffff
	// MaxFPDU is the largest FPDU on the wire.
	MaxFPDU = fpduLenLen + maxULPDU + 3 + crcLen
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// padLen is the pad after a ULPDU of n bytes.
func padLen(n int) int { return -(n + fpduLenLen) & 3 }

// fpduLen is the length of the FPDU that frames a ULPDU of n bytes.
func fpduLen(n int) int { return fpduLenLen + n + padLen(n) + crcLen }

// frameFPDU frames the ULPDU of n bytes already written at b[2:2+n]: it
// writes ULPDU_Length, zeroes the pad and returns the FPDU's length,
// leaving room for the CRC at its end (crcFPDUs fills it in). b must hold
// fpduLen(n) bytes.
func frameFPDU(b []byte, n int) int {
	binary.BigEndian.PutUint16(b, uint16(n))
	end := fpduLenLen + n
	for i := 0; i < padLen(n); i++ {
		b[end] = 0
		end++
	}
	return end + crcLen
}

// sealFPDU frames the ULPDU as frameFPDU does and appends its CRC.
func sealFPDU(b []byte, n int) int {
	l := frameFPDU(b, n)
	binary.LittleEndian.PutUint32(b[l-crcLen:], checksum(b[:l-crcLen]))
	return l
}

// crc3Min is the shortest run crc32c3 is used for: below it the calls
// and tails cost more than the chains save.
const crc3Min = 256

// checksum3 returns the CRC32c of a, b and c, computed together.
func checksum3(a, b, c []byte) (uint32, uint32, uint32) {
	ra, rb, rc := checksum3Raw(^uint32(0), ^uint32(0), ^uint32(0), a, b, c)
	return ^ra, ^rb, ^rc
}

// checksum3Raw advances three CRC32c registers (not inverted: a finished
// CRC is the register inverted) over a, b and c, together.
func checksum3Raw(ra, rb, rc uint32, a, b, c []byte) (uint32, uint32, uint32) {
	n := min(len(a), len(b), len(c)) &^ 7
	if haveCRC3 && n >= crc3Min {
		ra, rb, rc = crc32c3(&a[0], &b[0], &c[0], n, ra, rb, rc)
	} else {
		n = 0
	}
	return crcRaw(ra, a[n:]), crcRaw(rb, b[n:]), crcRaw(rc, c[n:])
}

// crcRaw advances the CRC32c register r (not inverted) over p, a few
// bytes: one chain of the CRC32 instruction where there is one.
func crcRaw(r uint32, p []byte) uint32 {
	switch {
	case len(p) == 0:
		return r
	case haveCRC3 && len(p) < crc3Min:
		return crc32cShort(r, &p[0], len(p))
	}
	return ^crc32.Update(^r, castagnoli, p)
}

// checksum is the CRC32c of p.
func checksum(p []byte) uint32 {
	if haveFold {
		return ^crcFold(^uint32(0), p)
	}
	return crc32.Checksum(p, castagnoli)
}

// foldMin is the shortest run crc32cFold is used for: below it the
// folds' and the reduction's chain of carry-less multiplies takes longer
// than one chain of the CRC32 instruction (a 64-byte Write's FPDU is 80
// bytes).
const foldMin = 128

// crcFold advances the CRC32c register r (not inverted) over p, folding
// what it can (haveFold).
func crcFold(r uint32, p []byte) uint32 {
	if n := len(p) &^ 15; n >= foldMin {
		r = crc32cFold(r, &p[0], n)
		p = p[n:]
	}
	return crcRaw(r, p)
}

// crcFPDUs fills in the CRCs of the whole FPDUs framed back to back in b
// (frameFPDU): folded with AVX-512 where there is, else three at a time.
func crcFPDUs(b []byte) {
	if haveFold {
		// One FPDU at a time: a fold runs at twice crc32c3's rate.
		for len(b) > 0 {
			l := fpduLen(int(binary.BigEndian.Uint16(b)))
			binary.LittleEndian.PutUint32(b[l-crcLen:], checksum(b[:l-crcLen]))
			b = b[l:]
		}
		return
	}
	var f [3][]byte // FPDUs, CRC included
	k := 0
	for len(b) > 0 {
		l := fpduLen(int(binary.BigEndian.Uint16(b)))
		f[k] = b[:l]
		b = b[l:]
		if k++; k < 3 && len(b) > 0 {
			continue
		}
		switch k {
		case 1:
			x := f[0]
			binary.LittleEndian.PutUint32(x[len(x)-crcLen:], crc32.Checksum(x[:len(x)-crcLen], castagnoli))
		default:
			if k == 2 {
				f[2] = f[1] // computed twice, kept once
			}
			ca, cb, cc := checksum3(f[0][:len(f[0])-crcLen], f[1][:len(f[1])-crcLen], f[2][:len(f[2])-crcLen])
			binary.LittleEndian.PutUint32(f[0][len(f[0])-crcLen:], ca)
			binary.LittleEndian.PutUint32(f[1][len(f[1])-crcLen:], cb)
			binary.LittleEndian.PutUint32(f[2][len(f[2])-crcLen:], cc)
		}
		k = 0
	}
}

// Errors found while deframing; each ends the connection with a
// Terminate naming the MPA layer.
var (
	errBadCRC    = errors.New("fpdu CRC mismatch")
	errBadLength = errors.New("fpdu ULPDU_Length out of range")
)

// checkFPDU verifies the CRC of the complete FPDU f (as fpduLen says) and
// returns its ULPDU.
func checkFPDU(f []byte) ([]byte, error) {
	n := int(binary.BigEndian.Uint16(f))
	end := fpduLenLen + n + padLen(n)
	if len(f) != end+crcLen {
		return nil, errBadLength
	}
	if binary.LittleEndian.Uint32(f[end:]) != checksum(f[:end]) {
		return nil, errBadCRC
	}
	return f[fpduLenLen : fpduLenLen+n], nil
}

// crcOK3 reports whether the complete FPDUs a, b and c (as fpduLen says)
// all carry their CRCs, computed together.
func crcOK3(a, b, c []byte) bool {
	ea, eb, ec := len(a)-crcLen, len(b)-crcLen, len(c)-crcLen
	ca, cb, cc := checksum3(a[:ea], b[:eb], c[:ec])
	return binary.LittleEndian.Uint32(a[ea:]) == ca && binary.LittleEndian.Uint32(b[eb:]) == cb &&
		binary.LittleEndian.Uint32(c[ec:]) == cc
}

// DDP segment headers (RFC 5041 §4). The first byte is DDP's control
// field: T (tagged), L (last segment of the message), reserved, DV (DDP
// version, 1). The second is the ULP's, RDMAP's control field: RV (RDMAP
// version, 1), reserved, opcode.
const (
	ddpTagged  = 0x80
	ddpLast    = 0x40
	ddpVersion = 1
	rdmapVer   = 1

	taggedHdrLen   = 14 // control, RDMAP control, STag, TO
	untaggedHdrLen = 18 // control, RDMAP control, 4 reserved/Inv STag, QN, MSN, MO
	minHdrLen      = taggedHdrLen
)

// Untagged queue numbers: RFC 5040 §5 (0–2) and RFC 7306 §8 (3).
const (
	qnSend       = 0 // Send, Send with Invalidate, Immediate Data
	qnReadReq    = 1 // Read Request
	qnTerminate  = 2 // Terminate
	qnAtomic     = 3 // Atomic Request
	qnAtomicResp = 4 // Atomic Response
	numQN        = 5
)

// Opcode is an RDMAP message type (RFC 5040 §4.2, RFC 7306 §8).
type Opcode uint8

// RDMAP opcodes.
const (
	OpWrite         Opcode = 0x0
	OpReadRequest   Opcode = 0x1
	OpReadResponse  Opcode = 0x2
	OpSend          Opcode = 0x3
	OpSendInv       Opcode = 0x4
	OpSendSE        Opcode = 0x5
	OpSendSEInv     Opcode = 0x6
	OpTerminate     Opcode = 0x7
	OpImmediate     Opcode = 0x8
	OpImmediateSE   Opcode = 0x9
	OpAtomicRequest Opcode = 0xa
	OpAtomicResp    Opcode = 0xb
)

var opNames = [...]string{"Write", "Read Request", "Read Response", "Send", "Send with Invalidate",
	"Send with SE", "Send with SE and Invalidate", "Terminate", "Immediate Data",
	"Immediate Data with SE", "Atomic Request", "Atomic Response"}

func (o Opcode) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// tagged reports whether o travels as a tagged DDP message.
func (o Opcode) tagged() bool { return o == OpWrite || o == OpReadResponse }

// queue is the untagged queue an untagged opcode travels on.
func (o Opcode) queue() uint32 {
	switch o {
	case OpReadRequest:
		return qnReadReq
	case OpTerminate:
		return qnTerminate
	case OpAtomicRequest:
		return qnAtomic
	case OpAtomicResp:
		return qnAtomicResp
	}
	return qnSend
}

// segment is a decoded DDP segment header: the fields of both buffer
// models, and the payload after it.
type segment struct {
	op     Opcode
	last   bool
	tagged bool
	stag   uint32 // tagged: STag; untagged: Invalidate STag (Send with Invalidate)
	to     uint64 // tagged: tagged offset
	qn     uint32 // untagged: queue number
	msn    uint32 // untagged: message sequence number
	mo     uint32 // untagged: message offset
	data   []byte
}

// putTagged writes a tagged header at b and returns its length.
func putTagged(b []byte, op Opcode, last bool, stag uint32, to uint64) int {
	c := byte(ddpTagged | ddpVersion)
	if last {
		c |= ddpLast
	}
	b[0] = c
	b[1] = rdmapVer<<6 | byte(op)
	binary.BigEndian.PutUint32(b[2:], stag)
	binary.BigEndian.PutUint64(b[6:], to)
	return taggedHdrLen
}

// putUntagged writes an untagged header at b and returns its length.
func putUntagged(b []byte, op Opcode, last bool, inv, qn, msn, mo uint32) int {
	c := byte(ddpVersion)
	if last {
		c |= ddpLast
	}
	b[0] = c
	b[1] = rdmapVer<<6 | byte(op)
	binary.BigEndian.PutUint32(b[2:], inv)
	binary.BigEndian.PutUint32(b[6:], qn)
	binary.BigEndian.PutUint32(b[10:], msn)
	binary.BigEndian.PutUint32(b[14:], mo)
	return untaggedHdrLen
}

// errHeader is a DDP or RDMAP header this end cannot accept; term says
// how the Terminate names it.
type errHeader struct {
	term termCode
	msg  string
}

func (e *errHeader) Error() string { return e.msg }

var (
	errDDPVersion   = &errHeader{termDDPVersion, "ddp: bad version"}
	errRDMAPVersion = &errHeader{termRDMAPVersion, "rdmap: bad version"}
	errOpcode       = &errHeader{termRDMAPOpcode, "rdmap: unexpected opcode"}
	errShortHeader  = &errHeader{termDDPTooShort, "ddp: segment shorter than its header"}
)

// parseSegment decodes the DDP segment (a ULPDU) u. It never panics: the
// checks come first.
func parseSegment(u []byte) (segment, error) {
	var s segment
	if len(u) < minHdrLen {
		return s, errShortHeader
	}
	if u[0]&3 != ddpVersion {
		return s, errDDPVersion
	}
	if u[1]>>6 != rdmapVer {
		return s, errRDMAPVersion
	}
	s.tagged = u[0]&ddpTagged != 0
	s.last = u[0]&ddpLast != 0
	s.op = Opcode(u[1] & 0xf)
	if s.op > OpAtomicResp || s.op.tagged() != s.tagged {
		return s, errOpcode
	}
	s.stag = binary.BigEndian.Uint32(u[2:])
	if s.tagged {
		s.to = binary.BigEndian.Uint64(u[6:])
		s.data = u[taggedHdrLen:]
		return s, nil
	}
	if len(u) < untaggedHdrLen {
		return s, errShortHeader
	}
	s.qn = binary.BigEndian.Uint32(u[6:])
	s.msn = binary.BigEndian.Uint32(u[10:])
	s.mo = binary.BigEndian.Uint32(u[14:])
	s.data = u[untaggedHdrLen:]
	return s, nil
}

// Read Request (RFC 5040 §4.4): sink STag, sink TO, size, source STag,
// source TO.
const readReqLen = 28

type readRequest struct {
	sinkSTag uint32
	sinkTO   uint64
	size     uint32
	srcSTag  uint32
	srcTO    uint64
}

func (r readRequest) put(b []byte) {
	binary.BigEndian.PutUint32(b[0:], r.sinkSTag)
	binary.BigEndian.PutUint64(b[4:], r.sinkTO)
	binary.BigEndian.PutUint32(b[12:], r.size)
	binary.BigEndian.PutUint32(b[16:], r.srcSTag)
	binary.BigEndian.PutUint64(b[20:], r.srcTO)
}

func parseReadRequest(b []byte) (readRequest, bool) {
	if len(b) != readReqLen {
		return readRequest{}, false
	}
	return readRequest{
		sinkSTag: binary.BigEndian.Uint32(b[0:]),
		sinkTO:   binary.BigEndian.Uint64(b[4:]),
		size:     binary.BigEndian.Uint32(b[12:]),
		srcSTag:  binary.BigEndian.Uint32(b[16:]),
		srcTO:    binary.BigEndian.Uint64(b[20:]),
	}, true
}

// Atomic Request (RFC 7306 §5.2.1): reserved | AOpCode (4 bits), request
// identifier, remote STag, remote TO, add-or-swap data, add-or-swap mask,
// compare data, compare mask. Atomic Response (§5.2.2): original request
// identifier, original remote data value.
const (
	atomicReqLen  = 52
	atomicRespLen = 12

	aopFetchAdd = 0
	aopCmpSwap  = 1
)

type atomicRequest struct {
	aop         uint8
	id          uint32
	stag        uint32
	to          uint64
	swapAdd     uint64
	swapAddMask uint64
	compare     uint64
	compareMask uint64
}

func (r atomicRequest) put(b []byte) {
	binary.BigEndian.PutUint32(b[0:], uint32(r.aop&0xf))
	binary.BigEndian.PutUint32(b[4:], r.id)
	binary.BigEndian.PutUint32(b[8:], r.stag)
	binary.BigEndian.PutUint64(b[12:], r.to)
	binary.BigEndian.PutUint64(b[20:], r.swapAdd)
	binary.BigEndian.PutUint64(b[28:], r.swapAddMask)
	binary.BigEndian.PutUint64(b[36:], r.compare)
	binary.BigEndian.PutUint64(b[44:], r.compareMask)
}

func parseAtomicRequest(b []byte) (atomicRequest, bool) {
	if len(b) != atomicReqLen {
		return atomicRequest{}, false
	}
	w := binary.BigEndian.Uint32(b[0:])
	if w>>4 != 0 || w&0xf > aopCmpSwap {
		return atomicRequest{}, false
	}
	return atomicRequest{
		aop:         uint8(w & 0xf),
		id:          binary.BigEndian.Uint32(b[4:]),
		stag:        binary.BigEndian.Uint32(b[8:]),
		to:          binary.BigEndian.Uint64(b[12:]),
		swapAdd:     binary.BigEndian.Uint64(b[20:]),
		swapAddMask: binary.BigEndian.Uint64(b[28:]),
		compare:     binary.BigEndian.Uint64(b[36:]),
		compareMask: binary.BigEndian.Uint64(b[44:]),
	}, true
}

// Immediate Data (RFC 7306 §5.3) carries 8 bytes; ustack puts a 32-bit
// immediate value (verbs' imm_data) in the first 4, big-endian, and zeroes
// the rest.
const immediateLen = 8

// Terminate (RFC 5040 §4.8): Layer (4 bits) | EType (4) | Error Code (8)
// | header control M D R (3 bits) | reserved (13), then, when D is set,
// the DDP (and, with R, RDMAP) header of the offending segment.
const terminateLen = 4

// termCode is a Terminate's layer, error type and error code in the
// 16 bits they occupy on the wire.
type termCode uint16

func term(layer, etype, code uint8) termCode {
	return termCode(uint16(layer)<<12 | uint16(etype&0xf)<<8 | uint16(code))
}

// Layers and the codes ustack sends (RFC 5040 §7.2, RFC 5041 §7.2, RFC
// 5044 §8).
const (
	layerRDMAP = 0
	layerDDP   = 1
	layerMPA   = 2
)

var (
	termInvalidSTag   = term(layerRDMAP, 1, 0x00) // remote protection: invalid STag
	termBounds        = term(layerRDMAP, 1, 0x01) // base or bounds violation
	termAccess        = term(layerRDMAP, 1, 0x02) // access rights violation
	termPD            = term(layerRDMAP, 1, 0x03) // STag not associated with this stream
	termCannotInv     = term(layerRDMAP, 1, 0x09) // STag cannot be invalidated
	termRDMAPVersion  = term(layerRDMAP, 2, 0x05) // remote operation: invalid RDMAP version
	termRDMAPOpcode   = term(layerRDMAP, 2, 0x06) // unexpected opcode
	termRemoteOp      = term(layerRDMAP, 2, 0xff) // unspecified remote operation error
	termCatastrophic  = term(layerRDMAP, 0, 0x00) // local catastrophic
	termDDPVersion    = term(layerDDP, 1, 0x04)   // tagged: invalid DDP version
	termDDPTooShort   = term(layerDDP, 0, 0x00)   // local catastrophic (malformed segment)
	termDDPBadQN      = term(layerDDP, 2, 0x01)   // untagged: invalid QN
	termDDPNoBuffer   = term(layerDDP, 2, 0x02)   // untagged: invalid MSN, no buffer available
	termDDPBadMSN     = term(layerDDP, 2, 0x03)   // untagged: invalid MSN range
	termDDPBadMO      = term(layerDDP, 2, 0x04)   // untagged: invalid MO
	termDDPTooLong    = term(layerDDP, 2, 0x05)   // untagged: message too long for buffer
	termMPACRC        = term(layerMPA, 0, 0x02)   // MPA: CRC error
	termMPABadLength  = term(layerMPA, 0, 0x04)   // MPA: invalid FPDU (length)
	termMPAConnClosed = term(layerMPA, 0, 0x01)
)

func (c termCode) layer() uint8 { return uint8(c >> 12) }
func (c termCode) etype() uint8 { return uint8(c>>8) & 0xf }
func (c termCode) code() uint8  { return uint8(c) }

// remoteAccess reports whether c is a protection error: an access
// violation at the remote end.
func (c termCode) remoteAccess() bool {
	return (c.layer() == layerRDMAP && c.etype() == 1) || (c.layer() == layerDDP && c.etype() == 1)
}

func (c termCode) String() string {
	layers := [...]string{"rdmap", "ddp", "mpa"}
	l := "layer?"
	if int(c.layer()) < len(layers) {
		l = layers[c.layer()]
	}
	return fmt.Sprintf("%s etype %d code %#02x", l, c.etype(), c.code())
}

func putTerminate(b []byte, c termCode) {
	binary.BigEndian.PutUint16(b, uint16(c))
	b[2], b[3] = 0, 0
}
