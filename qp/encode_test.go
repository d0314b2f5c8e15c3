package qp

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
)

// recordWriter keeps what is written to it.
type recordWriter struct {
	discard
	buf []byte
}

func (w *recordWriter) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	return len(b), nil
}

var _ net.Conn = (*recordWriter)(nil)

// TestEncodeLargeMessages encodes messages of many FPDUs: SGEs at odd
// offsets, SGEs shorter than an FPDU, a small message framed but not yet
// sealed before a large one, messages larger than the transmit buffer.
// Every FPDU must carry a good CRC, the headers must count offsets
// right, and the payload must arrive whole.
func TestEncodeLargeMessages(t *testing.T) {
	q, _, _ := engine(t)
	w := &recordWriter{}
	q.conn = w
	src := make([]byte, 200<<10)
	fill(src, 11)
	mr, err := q.pd.RegMR(src, LocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	k := mr.Key()
	most := maxPayload(q.cfg.MaxFPDU, taggedHdrLen)
	for _, tc := range []struct {
		name  string
		small bool // a 10-byte Write first, framed, not sealed
		sgl   []SGE
	}{
		{"one SGE, six full FPDUs", false, []SGE{{0, uint32(6 * most), k}}},
		{"one SGE, odd offset and length", false, []SGE{{3, 64<<10 + 5, k}}},
		{"after a small message", true, []SGE{{8, 20 << 10, k}}},
		{"SGEs of an FPDU or two and less", false, []SGE{{1, uint32(2*most + 7), k}, {9000, uint32(most), k}, {20000, 30 << 10, k}, {100, 3, k}}},
		{"one SGE, three full FPDUs", false, []SGE{{5, uint32(3 * most), k}}},
		{"a 192 KiB message across flushes", true, []SGE{{0, 192 << 10, k}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.buf = w.buf[:0]
			if tc.small {
				p := newPayload(nil, []SGE{{0, 10, k}})
				if ok, err := q.sendTagged(OpWrite, 0x777, 0, &p); !ok || err != nil {
					t.Fatal(ok, err)
				}
			}
			var want []byte
			for _, s := range tc.sgl {
				want = append(want, src[s.Offset:s.Offset+uint64(s.Len)]...)
			}
			p := newPayload(nil, tc.sgl)
			if ok, err := q.sendTagged(OpWrite, 0x555, 1000, &p); !ok || err != nil {
				t.Fatal(ok, err)
			}
			p = newPayload(nil, tc.sgl)
			if ok, err := q.sendUntagged(OpSend, 0, &p); !ok || err != nil {
				t.Fatal(ok, err)
			}
			if err := q.txFlush(); err != nil {
				t.Fatal(err)
			}
			// Reassemble each message by its offsets.
			got := map[Opcode][]byte{}
			lasts := map[Opcode]int{}
			stream := w.buf
			for len(stream) > 0 {
				l := fpduLen(int(binary.BigEndian.Uint16(stream)))
				if l > len(stream) || l > q.cfg.MaxFPDU {
					t.Fatalf("FPDU of %d bytes, %d left, MaxFPDU %d", l, len(stream), q.cfg.MaxFPDU)
				}
				u, err := checkFPDU(stream[:l])
				if err != nil {
					t.Fatal(err)
				}
				stream = stream[l:]
				sg, err := parseSegment(u)
				if err != nil {
					t.Fatal(err)
				}
				if sg.tagged && sg.stag == 0x777 {
					continue
				}
				off := int(sg.mo)
				if sg.tagged {
					off = int(sg.to) - 1000
				}
				if off != len(got[sg.op]) {
					t.Fatalf("%v segment at offset %d, want %d", sg.op, off, len(got[sg.op]))
				}
				if lasts[sg.op] > 0 {
					t.Fatalf("%v segment after the last", sg.op)
				}
				got[sg.op] = append(got[sg.op], sg.data...)
				if sg.last {
					lasts[sg.op]++
				}
			}
			for _, op := range []Opcode{OpWrite, OpSend} {
				if lasts[op] != 1 || !bytes.Equal(got[op], want) {
					t.Fatalf("%v: %d last segments, %d bytes, want 1 and %d bytes equal", op, lasts[op], len(got[op]), len(want))
				}
			}
		})
	}
	t.Run("region deregistered", func(t *testing.T) {
		p := newPayload(nil, []SGE{{0, 64 << 10, k}})
		if err := mr.Dereg(); err != nil {
			t.Fatal(err)
		}
		if ok, err := q.sendTagged(OpWrite, 0x555, 0, &p); ok || err != nil {
			t.Fatalf("sendTagged from a deregistered region: %v, %v; want false, nil", ok, err)
		}
	})
}

func BenchmarkEncodeWrite64K(b *testing.B) {
	q, _, _ := engine(b)
	src := make([]byte, 64<<10)
	mr, _ := q.pd.RegMR(src, LocalWrite)
	sgl := []SGE{{0, 64 << 10, mr.Key()}}
	b.SetBytes(64 << 10)
	b.ReportAllocs()
	for b.Loop() {
		p := newPayload(nil, sgl)
		q.sendTagged(OpWrite, 0x555, 0, &p)
		q.txFlush()
	}
}
