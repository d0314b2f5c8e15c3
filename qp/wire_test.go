package qp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestMPARoundTrip(t *testing.T) {
	for _, f := range []mpaFrame{
		{crc: true, rev: 1},
		{reply: true, crc: true, rev: 1, privateData: []byte("private")},
		{reply: true, crc: true, reject: true, rev: 1, privateData: bytes.Repeat([]byte{7}, MaxPrivateData)},
	} {
		b := appendMPA(nil, f)
		if len(b) != mpaHeaderLen+len(f.privateData) {
			t.Fatalf("encoded %d bytes", len(b))
		}
		g, n, err := parseMPAHeader(b, f.reply)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(f.privateData) || g.reply != f.reply || g.crc != f.crc || g.reject != f.reject || g.rev != 1 || g.markers {
			t.Fatalf("decoded %+v (%d), want %+v", g, n, f)
		}
	}
	// The fixed header, byte by byte (RFC 5044 §7.1): key, M C R flags,
	// revision, PD_Length.
	want := append([]byte("MPA ID Req Frame"), 0x40, 1, 0, 2, 'h', 'i')
	if got := appendMPA(nil, mpaFrame{crc: true, rev: 1, privateData: []byte("hi")}); !bytes.Equal(got, want) {
		t.Fatalf("request % x, want % x", got, want)
	}
}

func TestParseMPAHeaderRejects(t *testing.T) {
	good := appendMPA(nil, mpaFrame{reply: true, crc: true, rev: 1})
	for _, tc := range []struct {
		name string
		mod  func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:10] }},
		{"bad key", func(b []byte) []byte { b[3] = 'x'; return b }},
		{"request key where a reply is due", func(b []byte) []byte { copy(b, mpaKeyReq[:]); return b }},
		{"revision 2", func(b []byte) []byte { b[17] = 2; return b }},
		{"private data too long", func(b []byte) []byte { binary.BigEndian.PutUint16(b[18:], MaxPrivateData+1); return b }},
	} {
		b := tc.mod(append([]byte(nil), good...))
		if _, _, err := parseMPAHeader(b, true); !errors.Is(err, ErrMPA) {
			t.Errorf("%s: %v, want ErrMPA", tc.name, err)
		}
	}
	req := appendMPA(nil, mpaFrame{crc: true, reject: true, rev: 1})
	if _, _, err := parseMPAHeader(req, false); !errors.Is(err, ErrMPA) {
		t.Errorf("reject flag in a request: %v", err)
	}
}

func TestFPDUFraming(t *testing.T) {
	for n := minHdrLen; n < 200; n++ {
		b := make([]byte, fpduLen(n)+8)
		for i := range b {
			b[i] = 0xee
		}
		fill(b[2:2+n], byte(n))
		l := sealFPDU(b, n)
		if l != fpduLen(n) || l%4 != 0 {
			t.Fatalf("ULPDU %d: FPDU of %d bytes", n, l)
		}
		if binary.BigEndian.Uint16(b) != uint16(n) {
			t.Fatal("ULPDU_Length")
		}
		for i := 2 + n; i < l-4; i++ {
			if b[i] != 0 {
				t.Fatalf("ULPDU %d: pad byte %d is %#x", n, i, b[i])
			}
		}
		// CRC32c over length, ULPDU and pad, least significant byte first.
		want := crc32.Checksum(b[:l-4], crc32.MakeTable(crc32.Castagnoli))
		if got := uint32(b[l-4]) | uint32(b[l-3])<<8 | uint32(b[l-2])<<16 | uint32(b[l-1])<<24; got != want {
			t.Fatalf("CRC %#x, want %#x", got, want)
		}
		if u, err := checkFPDU(b[:l]); err != nil || !bytes.Equal(u, b[2:2+n]) {
			t.Fatalf("checkFPDU: %v", err)
		}
		for bit := 0; bit < l*8; bit += 7 {
			c := append([]byte(nil), b[:l]...)
			c[bit/8] ^= 1 << (bit % 8)
			if _, err := checkFPDU(c); err == nil && bit/8 >= 2 {
				t.Fatalf("ULPDU %d: flipped bit %d passed", n, bit)
			}
		}
	}
	// The CRC32c check value (RFC 3720 B.4).
	if c := crc32.Checksum([]byte("123456789"), castagnoli); c != 0xe3069283 {
		t.Fatalf("crc32c check value %#x", c)
	}
}

// crcPath is a CRC32c path (crcPaths): its name, and a function that
// selects it and returns one that restores the default.
type crcPath struct {
	name string
	use  func() (restore func())
}

// eachCRCPath runs f once with each CRC32c path this machine has.
func eachCRCPath(t *testing.T, f func(t *testing.T)) {
	for _, p := range crcPaths() {
		t.Run(p.name, func(t *testing.T) {
			defer p.use()()
			f(t)
		})
	}
}

// testCRCPathsAgree checks, with each path, checksum, checksum3 and
// crcRaw against hash/crc32 on lengths around the paths' thresholds
// (foldMin, its 16-byte steps, crc3Min, the 8-byte steps).
func testCRCPathsAgree(t *testing.T) {
	buf := make([]byte, 3*10000)
	for i := range buf {
		buf[i] = byte(i*31 + i>>8)
	}
	eachCRCPath(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 7, 8, 15, 16, 63, 64, 65, 79, 80, 127, 128, 129, 143, 144, 255, 256, 257, 263, 264, 1448, 1453, 9000} {
			for _, off := range []int{0, 1, 7} {
				a, b, c := buf[off:off+n], buf[10000+off:10000+off+n], buf[20000:20000+max(0, n-3)]
				want := crc32.Checksum(a, castagnoli)
				if got := checksum(a); got != want {
					t.Errorf("checksum of %d bytes at %d: %#x, want %#x", n, off, got, want)
				}
				if got := ^crcRaw(^uint32(0), a); got != want {
					t.Errorf("crcRaw over %d bytes at %d: %#x, want %#x", n, off, got, want)
				}
				ra, rb, rc := checksum3(a, b, c)
				if ra != want || rb != crc32.Checksum(b, castagnoli) || rc != crc32.Checksum(c, castagnoli) {
					t.Errorf("checksum3 of %d, %d and %d bytes at %d: wrong", len(a), len(b), len(c), off)
				}
			}
		}
	})
}

// TestChecksum3 compares the three-chain CRC with hash/crc32's on
// lengths around crc3Min and the 8-byte steps, each buffer at its own
// offset and length.
func TestChecksum3(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 3*4096)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	for n := 0; n < 300; n++ {
		p := buf[n : 2*n]
		if got, want := ^crcRaw(^uint32(0), p), crc32.Checksum(p, tab); got != want {
			t.Fatalf("crcRaw over %d bytes: %#x, want %#x", n, got, want)
		}
	}
	for _, n := range []int{0, 1, 7, 8, 255, 256, 257, 263, 264, 1448, 1453, 4000} {
		for i := 0; i < 20; i++ {
			var p [3][]byte
			for j := range p {
				m := max(0, n-r.IntN(9))
				off := j*4096 + r.IntN(4096-m+1)
				p[j] = buf[off : off+m]
			}
			a, b, c := checksum3(p[0], p[1], p[2])
			for j, got := range []uint32{a, b, c} {
				if want := crc32.Checksum(p[j], tab); got != want {
					t.Fatalf("length %d: CRC %d of %d bytes %#x, want %#x", n, j, len(p[j]), got, want)
				}
			}
		}
	}
}

// TestCRCFPDUs frames runs of one to seven FPDUs of mixed lengths and
// checks that crcFPDUs gives each the CRC sealFPDU would, with each
// CRC32c path (the fold takes them one at a time, crc32c3 three).
func TestCRCFPDUs(t *testing.T) { eachCRCPath(t, testCRCFPDUs) }

func testCRCFPDUs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for count := 1; count <= 7; count++ {
		var framed, sealed []byte
		for i := 0; i < count; i++ {
			n := minHdrLen + r.IntN(1500)
			if i%2 == 0 {
				n = 1442 // a full default FPDU
			}
			f := make([]byte, fpduLen(n))
			for j := 2; j < 2+n; j++ {
				f[j] = byte(r.Uint32())
			}
			g := append([]byte(nil), f...)
			frameFPDU(f, n)
			sealFPDU(g, n)
			framed, sealed = append(framed, f...), append(sealed, g...)
		}
		crcFPDUs(framed)
		if !bytes.Equal(framed, sealed) {
			t.Fatalf("%d FPDUs: crcFPDUs differs from sealFPDU", count)
		}
	}
}

func BenchmarkCRCFPDUs(b *testing.B) {
	const n = 1442 // ULPDU of a 1448-byte FPDU
	buf := make([]byte, 45*fpduLen(n))
	for off := 0; off < len(buf); off += fpduLen(n) {
		frameFPDU(buf[off:], n)
	}
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		crcFPDUs(buf)
	}
}

func TestSegmentRoundTrip(t *testing.T) {
	b := make([]byte, 64)
	putTagged(b, OpWrite, true, 0x01020304, 0x1122334455667788)
	s, err := parseSegment(b[:taggedHdrLen+5])
	if err != nil || !s.tagged || !s.last || s.op != OpWrite || s.stag != 0x01020304 || s.to != 0x1122334455667788 || len(s.data) != 5 {
		t.Fatalf("tagged: %+v %v", s, err)
	}
	// RFC 5041 §4.2: T L rsvd DV=01; RFC 5040 §4.3: RV=01 rsvd opcode.
	if b[0] != 0xc1 || b[1] != 0x40 {
		t.Fatalf("tagged control bytes %#x %#x", b[0], b[1])
	}
	putUntagged(b, OpSendInv, false, 0xabcdef01, qnSend, 7, 1400)
	s, err = parseSegment(b[:untaggedHdrLen])
	if err != nil || s.tagged || s.last || s.op != OpSendInv || s.stag != 0xabcdef01 || s.qn != 0 || s.msn != 7 || s.mo != 1400 || len(s.data) != 0 {
		t.Fatalf("untagged: %+v %v", s, err)
	}
	if b[0] != 0x01 || b[1] != 0x44 {
		t.Fatalf("untagged control bytes %#x %#x", b[0], b[1])
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"short", b[:13]},
		{"short untagged", func() []byte { putUntagged(b, OpSend, true, 0, 0, 1, 0); return b[:16] }()},
		{"tagged Send", func() []byte { putUntagged(b, OpSend, true, 0, 0, 1, 0); b[0] |= ddpTagged; return b[:20] }()},
		{"untagged Write", func() []byte { putTagged(b, OpWrite, true, 0, 0); b[0] &^= ddpTagged; return b[:20] }()},
		{"opcode 12", func() []byte { putUntagged(b, OpSend, true, 0, 0, 1, 0); b[1] = 0x4c; return b[:20] }()},
		{"RDMAP version 0", func() []byte { putUntagged(b, OpSend, true, 0, 0, 1, 0); b[1] &= 0x3f; return b[:20] }()},
	} {
		if _, err := parseSegment(tc.b); err == nil {
			t.Errorf("%s: parsed", tc.name)
		}
	}
}

func TestReadAndAtomicBodies(t *testing.T) {
	rr := readRequest{sinkSTag: 1, sinkTO: 2, size: 3, srcSTag: 4, srcTO: 5}
	b := make([]byte, readReqLen)
	rr.put(b)
	if g, ok := parseReadRequest(b); !ok || g != rr {
		t.Fatalf("read request %+v", g)
	}
	ar := atomicRequest{aop: aopCmpSwap, id: 9, stag: 0x101, to: 64, swapAdd: 7, swapAddMask: ^uint64(0), compare: 3, compareMask: ^uint64(0)}
	a := make([]byte, atomicReqLen)
	ar.put(a)
	if g, ok := parseAtomicRequest(a); !ok || g != ar {
		t.Fatalf("atomic request %+v", g)
	}
	a[3] = 5
	if _, ok := parseAtomicRequest(a); ok {
		t.Fatal("unknown atomic opcode parsed")
	}
}

// engine returns a queue pair in RTS whose transmissions are discarded
// and whose input the test drives: 256 bytes with a registered region at
// [64, 128) with every right, and a second, local-only region.
func engine(t testing.TB) (q *QP, backing, local []byte) {
	t.Helper()
	dev := NewDevice()
	pd := dev.AllocPD()
	cq, _ := dev.CreateCQ(1024)
	backing = make([]byte, 256)
	local = make([]byte, 64)
	if mr, _ := pd.RegMR(backing[64:128], LocalWrite|RemoteWrite|RemoteRead|RemoteAtomic); mr.Key() != fuzzKey {
		t.Fatalf("first key %#x, want %#x", mr.Key(), fuzzKey)
	}
	pd.RegMR(local, LocalWrite)
	q, err := pd.CreateQP(DefaultQPConfig(cq, cq))
	if err != nil {
		t.Fatal(err)
	}
	q.Modify(StateInit)
	q.PostRecv([]RecvWR{{ID: 1, SGL: []SGE{{0, 32, fuzzKey}}}, {ID: 2, SGL: []SGE{{32, 32, fuzzKey}}}})
	q.conn = discard{}
	q.state = StateRTS
	return q, backing, local
}

// fuzzKey is the first key a new Device hands out.
const fuzzKey = 0x101

type discard struct{ net.Conn }

func (discard) Write(b []byte) (int, error)       { return len(b), nil }
func (discard) Close() error                      { return nil }
func (discard) SetReadDeadline(t time.Time) error { return nil }

// seedStream is a valid stream exercising each opcode the responder
// handles.
func seedStream() []byte {
	var s []byte
	wr := make([]byte, taggedHdrLen+20)
	putTagged(wr, OpWrite, true, fuzzKey, 40)
	fill(wr[taggedHdrLen:], 1)
	s = append(s, frame(wr)...)
	// A two-segment Send.
	seg := make([]byte, untaggedHdrLen+10)
	putUntagged(seg, OpSend, false, 0, qnSend, 1, 0)
	fill(seg[untaggedHdrLen:], 2)
	s = append(s, frame(seg)...)
	putUntagged(seg, OpSend, true, 0, qnSend, 1, 10)
	s = append(s, frame(seg)...)
	im := make([]byte, untaggedHdrLen+immediateLen)
	putUntagged(im, OpImmediate, true, 0, qnSend, 2, 0)
	s = append(s, frame(im)...)
	rr := make([]byte, untaggedHdrLen+readReqLen)
	putUntagged(rr, OpReadRequest, true, 0, qnReadReq, 1, 0)
	readRequest{sinkSTag: 0x999, size: 16, srcSTag: fuzzKey, srcTO: 8}.put(rr[untaggedHdrLen:])
	s = append(s, frame(rr)...)
	ar := make([]byte, untaggedHdrLen+atomicReqLen)
	putUntagged(ar, OpAtomicRequest, true, 0, qnAtomic, 1, 0)
	atomicRequest{aop: aopFetchAdd, id: 1, stag: fuzzKey, to: 56, swapAdd: 3}.put(ar[untaggedHdrLen:])
	s = append(s, frame(ar)...)
	return s
}

// outside reports whether any byte outside the region changed.
func outside(backing, local []byte) bool {
	for _, b := range backing[:64] {
		if b != 0 {
			return true
		}
	}
	for _, b := range backing[128:] {
		if b != 0 {
			return true
		}
	}
	for _, b := range local {
		if b != 0 {
			return true
		}
	}
	return false
}

// FuzzInput feeds arbitrary streams to the engine: it never panics, and
// nothing outside the registered remote region ever changes.
func FuzzInput(f *testing.F) {
	f.Add(seedStream())
	f.Add(frame(sendSegment(OpSend, 1, []byte("hello"))))
	f.Fuzz(func(t *testing.T, stream []byte) {
		q, backing, local := engine(t)
		q.input(stream)
		if outside(backing, local) {
			t.Fatal("input wrote outside the registered region")
		}
	})
}

// FuzzReassembly cuts a valid stream at fuzzed points: the result equals
// that of the whole stream in one piece.
func FuzzReassembly(f *testing.F) {
	f.Add(uint64(1), uint8(1))
	f.Add(uint64(42), uint8(7))
	f.Add(uint64(7), uint8(200))
	stream := seedStream()
	want, wantBacking, _ := engine(f)
	want.input(stream)
	f.Fuzz(func(t *testing.T, seed uint64, maxCut uint8) {
		q, backing, local := engine(t)
		r := rand.New(rand.NewPCG(seed, seed))
		for p := stream; len(p) > 0; {
			n := min(len(p), 1+r.IntN(int(maxCut)+1))
			if !q.input(p[:n]) {
				t.Fatalf("input failed: %v", q.Err())
			}
			p = p[n:]
		}
		if !bytes.Equal(backing, wantBacking) || outside(backing, local) {
			t.Fatal("cut stream placed differently")
		}
		if q.State() != StateRTS || q.respN != 2 || q.msnIn != want.msnIn {
			t.Fatalf("state %v, %d responses, MSNs %v; want rts, 2, %v", q.State(), q.respN, q.msnIn, want.msnIn)
		}
	})
}

func FuzzParseSegment(f *testing.F) {
	b := make([]byte, 40)
	putTagged(b, OpWrite, true, 1, 2)
	f.Add(b[:20])
	putUntagged(b, OpSend, true, 0, 0, 1, 0)
	f.Add(b[:30])
	f.Fuzz(func(t *testing.T, u []byte) {
		s, err := parseSegment(u)
		if err != nil {
			return
		}
		hdr := untaggedHdrLen
		if s.tagged {
			hdr = taggedHdrLen
		}
		if len(s.data) != len(u)-hdr || s.op.tagged() != s.tagged {
			t.Fatalf("%+v from %d bytes", s, len(u))
		}
	})
}

func FuzzMPAHeader(f *testing.F) {
	f.Add(appendMPA(nil, mpaFrame{crc: true, rev: 1, privateData: []byte("x")}), false)
	f.Add(appendMPA(nil, mpaFrame{reply: true, crc: true, reject: true, rev: 1}), true)
	f.Fuzz(func(t *testing.T, b []byte, reply bool) {
		m, n, err := parseMPAHeader(b, reply)
		if err != nil {
			return
		}
		if n > MaxPrivateData || m.rev != 1 || m.reply != reply {
			t.Fatalf("accepted %+v, %d", m, n)
		}
		m.privateData = make([]byte, n)
		if got := appendMPA(nil, m); !bytes.Equal(got[:mpaHeaderLen-4], b[:mpaHeaderLen-4]) {
			t.Fatal("re-encoding differs")
		}
	})
}

// TestWriteSeedCorpus writes the fuzz targets' seeds under testdata/fuzz
// when QP_WRITE_CORPUS=1 (they are committed; rerun after a format
// change).
func TestWriteSeedCorpus(t *testing.T) {
	if os.Getenv("QP_WRITE_CORPUS") != "1" {
		t.Skip("set QP_WRITE_CORPUS=1 to rewrite testdata/fuzz")
	}
	write := func(target, name string, vals ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		os.MkdirAll(dir, 0o755)
		body := "go test fuzz v1\n"
		for _, v := range vals {
			body += v + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q := func(b []byte) string { return fmt.Sprintf("[]byte(%q)", b) }
	write("FuzzInput", "seed-every-opcode", q(seedStream()))
	bad := seedStream()
	bad[len(bad)-1] ^= 1
	write("FuzzInput", "seed-bad-crc", q(bad))
	write("FuzzInput", "seed-lying-length", q([]byte{0xff, 0xff, 1, 2, 3}))
	write("FuzzReassembly", "seed-byte-at-a-time", "uint64(3)", "uint8(0)")
	write("FuzzParseSegment", "seed-terminate", q(sendSegment(OpTerminate, 1, []byte{0x12, 0x00, 0, 0})))
	write("FuzzMPAHeader", "seed-reply-pd", q(appendMPA(nil, mpaFrame{reply: true, crc: true, rev: 1, privateData: []byte("pd")})), "bool(true)")
}

// TestWriteControlBytes checks that input's shortcut for Write segments
// accepts what parseSegment does: reserved bits set in either control
// byte do not stop a Write landing, and a bad version still fails it.
func TestWriteControlBytes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ddp, rdmap byte // XORed into the control bytes
		lands      bool
	}{
		{"clear", 0, 0, true},
		{"not last", ddpLast, 0, true},
		{"DDP reserved", 0x3c, 0, true},
		{"RDMAP reserved", 0, 0x30, true},
		{"DDP version 0", ddpVersion, 0, false},
		{"RDMAP version 0", 0, rdmapVer << 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, backing, _ := engine(t)
			seg := make([]byte, taggedHdrLen+8)
			putTagged(seg, OpWrite, true, fuzzKey, 16)
			copy(seg[taggedHdrLen:], "landed!!")
			seg[0] ^= tc.ddp
			seg[1] ^= tc.rdmap
			ok := q.input(frame(seg))
			landed := string(backing[64+16:64+24]) == "landed!!"
			if ok != tc.lands || landed != tc.lands {
				t.Errorf("control bytes %#02x %#02x: input %v, landed %v; want both %v", seg[0], seg[1], ok, landed, tc.lands)
			}
		})
	}
}
