package qp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestConnectExchangesPrivateData(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	if string(b.peerPD) != "hello" || string(a.peerPD) != "reply" {
		t.Fatalf("private data: responder got %q, initiator %q", b.peerPD, a.peerPD)
	}
	if a.qp.State() != StateRTS || b.qp.State() != StateRTS {
		t.Fatalf("states %v, %v; want rts", a.qp.State(), b.qp.State())
	}
}

func TestSendRecv(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	for _, tc := range []struct {
		name string
		sgl  []SGE // into a.buf
		rsgl []SGE // into b.buf
	}{
		{"one SGE", []SGE{{0, 100, a.mr.Key()}}, []SGE{{1000, 200, b.mr.Key()}}},
		{"multi SGE both sides", []SGE{{0, 3000, a.mr.Key()}, {5000, 7, a.mr.Key()}, {9000, 1500, a.mr.Key()}},
			[]SGE{{100, 1, b.mr.Key()}, {200, 2000, b.mr.Key()}, {30000, 4000, b.mr.Key()}}},
		{"zero length", nil, []SGE{{0, 16, b.mr.Key()}}},
		{"zero length into no SGE", nil, nil},
		{"multi FPDU", []SGE{{0, 60000, a.mr.Key()}}, []SGE{{0, 65536, b.mr.Key()}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fill(a.buf, 3)
			clear(b.buf)
			postRecv(t, b.qp, RecvWR{ID: 7, SGL: tc.rsgl})
			post(t, a.qp, SendWR{ID: 1, Op: WRSend, Flags: Signaled, SGL: tc.sgl})
			waitOK(t, a.scq, 1, WCSend)
			wc := waitOK(t, b.rcq, 7, WCRecv)
			var want []byte
			for _, g := range tc.sgl {
				want = append(want, a.buf[g.Offset:g.Offset+uint64(g.Len)]...)
			}
			if int(wc.Len) != len(want) {
				t.Fatalf("received %d bytes, sent %d", wc.Len, len(want))
			}
			var got []byte
			for _, g := range tc.rsgl {
				got = append(got, b.buf[g.Offset:g.Offset+uint64(g.Len)]...)
			}
			if !bytes.Equal(got[:len(want)], want) {
				t.Fatal("received data differs")
			}
			if bytes.ContainsFunc(got[len(want):], func(r rune) bool { return r != 0 }) {
				t.Fatal("bytes past the message were written")
			}
		})
	}
}

func TestSendInline(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	msg := []byte("inline payload, no registration needed")
	postRecv(t, b.qp, RecvWR{ID: 1, SGL: []SGE{{0, 100, b.mr.Key()}}})
	wr := SendWR{ID: 2, Op: WRSend, Flags: Signaled | Inline, Inline: msg}
	post(t, a.qp, wr)
	copy(msg, "XXXXXX") // the buffer is free once PostSend returns
	waitOK(t, a.scq, 2, WCSend)
	wc := waitOK(t, b.rcq, 1, WCRecv)
	if got := string(b.buf[:wc.Len]); got != "inline payload, no registration needed" {
		t.Fatalf("got %q", got)
	}
	// Inline Write.
	post(t, a.qp, SendWR{ID: 3, Op: WRWrite, Flags: Signaled | Inline, Inline: []byte("abc"), RemoteKey: b.mr.Key(), RemoteOffset: 500})
	waitOK(t, a.scq, 3, WCWrite)
	postRecv(t, b.qp, RecvWR{ID: 4})
	post(t, a.qp, SendWR{ID: 5, Op: WRSend})
	waitOK(t, b.rcq, 4, WCRecv)
	if string(b.buf[500:503]) != "abc" {
		t.Fatalf("inline write: got %q", b.buf[500:503])
	}
}

func TestWrite(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	for _, tc := range []struct {
		name string
		sgl  []SGE
		off  uint64
	}{
		{"one SGE", []SGE{{0, 64, a.mr.Key()}}, 0},
		{"multi SGE", []SGE{{10, 1000, a.mr.Key()}, {4000, 3, a.mr.Key()}, {50000, 5000, a.mr.Key()}}, 777},
		{"zero length", nil, 12},
		{"64 KiB", []SGE{{0, 65536, a.mr.Key()}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fill(a.buf, 11)
			clear(b.buf)
			post(t, a.qp, SendWR{ID: 5, Op: WRWrite, Flags: Signaled, SGL: tc.sgl, RemoteKey: b.mr.Key(), RemoteOffset: tc.off})
			waitOK(t, a.scq, 5, WCWrite)
			var want []byte
			for _, g := range tc.sgl {
				want = append(want, a.buf[g.Offset:g.Offset+uint64(g.Len)]...)
			}
			// A Send after the Write arrives after it: its completion
			// proves the Write landed.
			postRecv(t, b.qp, RecvWR{ID: 9})
			post(t, a.qp, SendWR{ID: 6, Op: WRSend})
			waitOK(t, b.rcq, 9, WCRecv)
			if !bytes.Equal(b.buf[tc.off:tc.off+uint64(len(want))], want) {
				t.Fatal("written data differs")
			}
			if n := bytes.Count(b.buf, []byte{0}); n != len(b.buf)-len(want)+bytes.Count(want, []byte{0}) {
				t.Fatal("bytes outside the write changed")
			}
		})
	}
}

func TestWriteWithImm(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	fill(a.buf, 1)
	postRecv(t, b.qp, RecvWR{ID: 4})
	post(t, a.qp, SendWR{ID: 8, Op: WRWriteWithImm, Flags: Signaled, SGL: []SGE{{0, 3000, a.mr.Key()}},
		RemoteKey: b.mr.Key(), RemoteOffset: 100, Imm: 0xdeadbeef})
	waitOK(t, a.scq, 8, WCWrite)
	wc := waitOK(t, b.rcq, 4, WCRecvWithImm)
	if wc.Flags&WCWithImm == 0 || wc.Imm != 0xdeadbeef {
		t.Fatalf("completion %+v, want imm 0xdeadbeef", wc)
	}
	if !bytes.Equal(b.buf[100:3100], a.buf[:3000]) {
		t.Fatal("data not in place when the immediate completed")
	}
}

func TestRead(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	for _, tc := range []struct {
		name string
		sgl  []SGE
		off  uint64
	}{
		{"one SGE", []SGE{{0, 64, a.mr.Key()}}, 0},
		{"multi SGE", []SGE{{10, 1000, a.mr.Key()}, {4000, 3, a.mr.Key()}, {50000, 5000, a.mr.Key()}}, 777},
		{"zero length", nil, 0},
		{"64 KiB", []SGE{{0, 65536, a.mr.Key()}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(a.buf)
			fill(b.buf, 5)
			post(t, a.qp, SendWR{ID: 3, Op: WRRead, Flags: Signaled, SGL: tc.sgl, RemoteKey: b.mr.Key(), RemoteOffset: tc.off})
			wc := waitOK(t, a.scq, 3, WCRead)
			var got []byte
			for _, g := range tc.sgl {
				got = append(got, a.buf[g.Offset:g.Offset+uint64(g.Len)]...)
			}
			if int(wc.Len) != len(got) {
				t.Fatalf("read completion says %d bytes, want %d", wc.Len, len(got))
			}
			if !bytes.Equal(got, b.buf[tc.off:tc.off+uint64(len(got))]) {
				t.Fatal("read data differs")
			}
		})
	}
}

func TestAtomics(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	word := func() uint64 { return binary.NativeEndian.Uint64(b.buf[64:]) }
	result := func() uint64 { return binary.NativeEndian.Uint64(a.buf[8:]) }
	binary.NativeEndian.PutUint64(b.buf[64:], 40)
	res := []SGE{{8, 8, a.mr.Key()}}
	post(t, a.qp, SendWR{ID: 1, Op: WRFetchAdd, Flags: Signaled, SGL: res, RemoteKey: b.mr.Key(), RemoteOffset: 64, CompareAdd: 2})
	waitOK(t, a.scq, 1, WCFetchAdd)
	if result() != 40 || word() != 42 {
		t.Fatalf("fetch-add: returned %d, word %d; want 40, 42", result(), word())
	}
	post(t, a.qp, SendWR{ID: 2, Op: WRCmpSwap, Flags: Signaled, SGL: res, RemoteKey: b.mr.Key(), RemoteOffset: 64, CompareAdd: 41, Swap: 7})
	waitOK(t, a.scq, 2, WCCmpSwap)
	if result() != 42 || word() != 42 {
		t.Fatalf("failed compare-swap: returned %d, word %d; want 42, 42", result(), word())
	}
	post(t, a.qp, SendWR{ID: 3, Op: WRCmpSwap, Flags: Signaled, SGL: res, RemoteKey: b.mr.Key(), RemoteOffset: 64, CompareAdd: 42, Swap: 7})
	waitOK(t, a.scq, 3, WCCmpSwap)
	if result() != 42 || word() != 7 {
		t.Fatalf("compare-swap: returned %d, word %d; want 42, 7", result(), word())
	}
}

func TestSendWithInvalidate(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	region := make([]byte, 128)
	mr2, err := b.pd.RegMR(region, LocalWrite|RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	postRecv(t, b.qp, RecvWR{ID: 1, SGL: []SGE{{0, 10, b.mr.Key()}}})
	post(t, a.qp, SendWR{ID: 2, Op: WRSendWithInv, Flags: Signaled | Inline, Inline: []byte("bye"), InvKey: mr2.Key()})
	waitOK(t, a.scq, 2, WCSend)
	wc := waitOK(t, b.rcq, 1, WCRecv)
	if wc.Flags&WCWithInv == 0 || wc.InvKey != mr2.Key() {
		t.Fatalf("completion %+v, want invalidation of %#x", wc, mr2.Key())
	}
	// The invalidated key no longer takes remote writes.
	post(t, a.qp, SendWR{ID: 3, Op: WRWrite, Flags: Inline, Inline: []byte("x"), RemoteKey: mr2.Key()})
	waitState(t, a.qp, StateError)
	if !isErr(a.qp.Err(), ErrRemoteAccess) {
		t.Fatalf("err %v, want remote access", a.qp.Err())
	}
	if region[0] != 0 {
		t.Fatal("write through an invalidated key landed")
	}
}
