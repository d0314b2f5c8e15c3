package qp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

func TestPostSendErrorsAreSynchronous(t *testing.T) {
	e := newEnd(t, pairOpts{cfg: func(c *QPConfig) { c.SendDepth = 4; c.MaxSGE = 2; c.MaxInline = 8 }})
	// Init: sends are refused.
	if n, err := e.qp.PostSend([]SendWR{{Op: WRSend}}); n != 0 || !errors.Is(err, ErrState) {
		t.Fatalf("PostSend in init: %d, %v; want 0, ErrState", n, err)
	}
	f := newEnd(t, pairOpts{})
	ca, cb := tcpConns(t)
	connect(t, e, f, ca, cb)
	other := e.dev.AllocPD()
	otherMR, _ := other.RegMR(make([]byte, 64), LocalWrite)
	roMR, _ := e.pd.RegMR(make([]byte, 64), 0)
	k := e.mr.Key()
	for _, tc := range []struct {
		name string
		wr   SendWR
		want error
	}{
		{"too many SGEs", SendWR{Op: WRSend, SGL: []SGE{{0, 1, k}, {0, 1, k}, {0, 1, k}}}, ErrTooManySGE},
		{"unknown key", SendWR{Op: WRSend, SGL: []SGE{{0, 1, 0x12345678}}}, ErrLocalKey},
		{"key of another domain", SendWR{Op: WRSend, SGL: []SGE{{0, 1, otherMR.Key()}}}, ErrLocalKey},
		{"out of bounds", SendWR{Op: WRSend, SGL: []SGE{{65530, 7, k}}}, ErrLocalKey},
		{"offset overflow", SendWR{Op: WRSend, SGL: []SGE{{^uint64(0), 2, k}}}, ErrLocalKey},
		{"read into a region without LocalWrite", SendWR{Op: WRRead, SGL: []SGE{{0, 8, roMR.Key()}}}, ErrLocalKey},
		{"inline too long", SendWR{Op: WRSend, Flags: Inline, Inline: make([]byte, 9)}, ErrInvalidWR},
		{"inline read", SendWR{Op: WRRead, Flags: Inline, Inline: []byte("x")}, ErrInvalidWR},
		{"atomic of 4 bytes", SendWR{Op: WRFetchAdd, SGL: []SGE{{0, 4, k}}}, ErrInvalidWR},
		{"unaligned atomic", SendWR{Op: WRCmpSwap, SGL: []SGE{{0, 8, k}}, RemoteOffset: 4}, ErrInvalidWR},
		{"unknown opcode", SendWR{Op: 99}, ErrInvalidWR},
	} {
		if n, err := e.qp.PostSend([]SendWR{tc.wr}); n != 0 || !errors.Is(err, tc.want) {
			t.Errorf("%s: PostSend = %d, %v; want 0, %v", tc.name, n, err, tc.want)
		}
	}
	// A batch reports the first rejected request; the ones before it run.
	batch := []SendWR{
		{ID: 1, Op: WRWrite, Flags: Signaled | Inline, Inline: []byte("a"), RemoteKey: f.mr.Key()},
		{ID: 2, Op: WRWrite, Flags: Signaled | Inline, Inline: []byte("b"), RemoteKey: f.mr.Key()},
		{ID: 3, Op: WRSend, SGL: []SGE{{0, 1, 0xbad}}},
		{ID: 4, Op: WRSend},
	}
	if n, err := e.qp.PostSend(batch); n != 2 || !errors.Is(err, ErrLocalKey) {
		t.Fatalf("batch: posted %d, %v; want 2, ErrLocalKey", n, err)
	}
	waitOK(t, e.scq, 1, WCWrite)
	waitOK(t, e.scq, 2, WCWrite)
	noCompletion(t, e.scq)
	if e.qp.State() != StateRTS {
		t.Fatalf("posting errors moved the queue pair to %v", e.qp.State())
	}
}

func TestSendQueueFull(t *testing.T) {
	a, b := newPair(t, pairOpts{cfg: func(c *QPConfig) { c.SendDepth = 4; c.ORD = 1 }})
	// Reads behind a fenced one wait for it: the queue fills.
	blocker := SendWR{Op: WRRead, SGL: []SGE{{0, 8, a.mr.Key()}}, RemoteKey: b.mr.Key()}
	wrs := make([]SendWR, 6)
	for i := range wrs {
		wrs[i] = blocker
		wrs[i].ID = uint64(i)
		wrs[i].Flags = Signaled
	}
	n, err := a.qp.PostSend(wrs)
	// The first Read is in flight (ORD 1); the queue holds 4 in all.
	if n != 4 || !errors.Is(err, ErrQueueFull) {
		// The first Read may have completed already and freed its slot.
		if n != 5 || !errors.Is(err, ErrQueueFull) {
			t.Fatalf("posted %d, %v; want 4 (or 5), ErrQueueFull", n, err)
		}
	}
	for i := 0; i < n; i++ {
		waitOK(t, a.scq, uint64(i), WCRead)
	}
}

func TestReceiveQueueFull(t *testing.T) {
	e := newEnd(t, pairOpts{cfg: func(c *QPConfig) { c.RecvDepth = 2 }})
	wrs := []RecvWR{{ID: 1}, {ID: 2}, {ID: 3}}
	if n, err := e.qp.PostRecv(wrs); n != 2 || !errors.Is(err, ErrQueueFull) {
		t.Fatalf("PostRecv: %d, %v; want 2, ErrQueueFull", n, err)
	}
	r := newEnd(t, pairOpts{})
	r.qp.Modify(StateError)
	if err := r.qp.Modify(StateReset); err != nil {
		t.Fatal(err)
	}
	if n, err := r.qp.PostRecv(wrs); n != 0 || !errors.Is(err, ErrState) {
		t.Fatalf("PostRecv in reset: %d, %v; want 0, ErrState", n, err)
	}
}

func TestUnsignaledSlotsAreReclaimed(t *testing.T) {
	a, b := newPair(t, pairOpts{cfg: func(c *QPConfig) { c.SendDepth = 8 }})
	// 20 times the queue's depth of unsignaled Writes, one signaled in 8:
	// the queue never stays full, and only the signaled ones complete.
	signaled := 0
	for i := 0; i < 160; i++ {
		wr := SendWR{ID: uint64(i), Op: WRWrite, Flags: Inline, Inline: []byte{byte(i)}, RemoteKey: b.mr.Key(), RemoteOffset: uint64(i)}
		if i%8 == 7 {
			wr.Flags |= Signaled
			signaled++
		}
		for {
			_, err := a.qp.PostSend([]SendWR{wr})
			if err == nil {
				break
			}
			if !errors.Is(err, ErrQueueFull) {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := 0; i < signaled; i++ {
		wc := wait(t, a.scq)
		if wc.Status != StatusSuccess || wc.ID%8 != 7 {
			t.Fatalf("completion %+v: want only the signaled writes", wc)
		}
	}
	noCompletion(t, a.scq)
}

func TestCQOverflow(t *testing.T) {
	a, b := newPair(t, pairOpts{cqN: 4})
	for i := 0; i < 6; i++ {
		a.qp.PostSend([]SendWR{{ID: uint64(i), Op: WRWrite, Flags: Signaled | Inline, Inline: []byte("x"), RemoteKey: b.mr.Key()}})
	}
	waitState(t, a.qp, StateError)
	if !errors.Is(a.scq.Err(), ErrCQOverflow) || !errors.Is(a.qp.Err(), ErrCQOverflow) {
		t.Fatalf("cq err %v, qp err %v; want ErrCQOverflow", a.scq.Err(), a.qp.Err())
	}
	// The four completions that fit are there, in order.
	var wcs [8]WC
	if n := a.scq.Poll(wcs[:]); n != 4 {
		t.Fatalf("polled %d, want 4", n)
	}
	for i, wc := range wcs[:4] {
		if wc.ID != uint64(i) {
			t.Fatalf("completion %d has id %d", i, wc.ID)
		}
	}
	if err := a.scq.Wait(context.Background()); !errors.Is(err, ErrCQOverflow) {
		t.Fatalf("Wait on an overflowed, empty CQ: %v", err)
	}
	// The peer sees the connection end.
	waitState(t, b.qp, StateError)
}

func TestSRQ(t *testing.T) {
	srv := newEnd(t, pairOpts{srq: true})
	cfg := DefaultQPConfig(srv.scq, srv.rcq)
	cfg.SRQ = srv.srq
	qp2, err := srv.pd.CreateQP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	qp2.Modify(StateInit)
	t.Cleanup(func() { qp2.Close() })
	srv2 := &end{dev: srv.dev, pd: srv.pd, scq: srv.scq, rcq: srv.rcq, qp: qp2, mr: srv.mr, buf: srv.buf}
	c1, c2 := newEnd(t, pairOpts{}), newEnd(t, pairOpts{})
	x1, y1 := tcpConns(t)
	connect(t, c1, srv, x1, y1)
	x2, y2 := tcpConns(t)
	connect(t, c2, srv2, x2, y2)
	if n, err := srv.qp.PostRecv([]RecvWR{{ID: 1}}); n != 0 || !errors.Is(err, ErrState) {
		t.Fatalf("PostRecv on an SRQ queue pair: %d, %v", n, err)
	}
	if _, err := srv.srq.PostRecv([]RecvWR{{ID: 10, SGL: []SGE{{0, 100, srv.mr.Key()}}}, {ID: 11, SGL: []SGE{{100, 100, srv.mr.Key()}}}}); err != nil {
		t.Fatal(err)
	}
	post(t, c2.qp, SendWR{Op: WRSend, Flags: Inline, Inline: []byte("from c2")})
	wc := waitOK(t, srv.rcq, 10, WCRecv)
	if wc.QPN != qp2.Num() || string(srv.buf[:wc.Len]) != "from c2" {
		t.Fatalf("first receive: %+v %q", wc, srv.buf[:wc.Len])
	}
	post(t, c1.qp, SendWR{Op: WRSend, Flags: Inline, Inline: []byte("from c1")})
	wc = waitOK(t, srv.rcq, 11, WCRecv)
	if wc.QPN != srv.qp.Num() || string(srv.buf[100:100+wc.Len]) != "from c1" {
		t.Fatalf("second receive: %+v", wc)
	}
	if srv.srq.Len() != 0 {
		t.Fatalf("SRQ holds %d, want 0", srv.srq.Len())
	}
}

func TestFlushInOrderAfterRemoteAccessError(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	postRecv(t, a.qp, RecvWR{ID: 100}, RecvWR{ID: 101})
	post(t, a.qp,
		SendWR{ID: 1, Op: WRWrite, Flags: Inline, Inline: []byte("ok"), RemoteKey: b.mr.Key()}, // unsignaled success
		SendWR{ID: 2, Op: WRRead, SGL: []SGE{{0, 8, a.mr.Key()}}, RemoteKey: b.mr.Key() ^ 0xff},
		SendWR{ID: 3, Op: WRWrite, Inline: []byte("a"), Flags: Inline, RemoteKey: b.mr.Key()},
		SendWR{ID: 4, Op: WRSend, Flags: Signaled | Fence},
		SendWR{ID: 5, Op: WRFetchAdd, SGL: []SGE{{8, 8, a.mr.Key()}}, RemoteKey: b.mr.Key()},
	)
	wc := wait(t, a.scq)
	if wc.ID != 2 || wc.Status != StatusRemoteAccess || wc.Op != WCRead {
		t.Fatalf("first completion %+v, want the Read with a remote access error", wc)
	}
	for id := uint64(3); id <= 5; id++ {
		wc := wait(t, a.scq)
		if wc.ID != id || wc.Status != StatusFlush {
			t.Fatalf("completion %+v, want id %d flushed", wc, id)
		}
	}
	for id := uint64(100); id <= 101; id++ {
		wc := wait(t, a.rcq)
		if wc.ID != id || wc.Status != StatusFlush || wc.Op != WCRecv {
			t.Fatalf("receive completion %+v, want id %d flushed", wc, id)
		}
	}
	if a.qp.State() != StateError || !errors.Is(a.qp.Err(), ErrRemoteAccess) {
		t.Fatalf("state %v, err %v", a.qp.State(), a.qp.Err())
	}
	var te *TerminateError
	if !errors.As(a.qp.Err(), &te) || te.Layer != layerRDMAP || te.EType != 1 || te.Code != 0 {
		t.Fatalf("err %v, want a Terminate for an invalid STag", a.qp.Err())
	}
	waitState(t, b.qp, StateError)
	if !errors.Is(b.qp.Err(), ErrProtocol) {
		t.Fatalf("responder err %v, want ErrProtocol", b.qp.Err())
	}
	// Posting in Error completes at once with a flush.
	post(t, a.qp, SendWR{ID: 9, Op: WRSend})
	if wc := wait(t, a.scq); wc.ID != 9 || wc.Status != StatusFlush {
		t.Fatalf("post in error: %+v", wc)
	}
}

// TestRemoteAccessViolations: every way a peer's request can exceed what
// a region grants is refused with a Terminate naming it, before any byte
// is touched.
func TestRemoteAccessViolations(t *testing.T) {
	type setup struct {
		key uint32
		off uint64
		buf []byte
	}
	cases := []struct {
		name string
		code uint8
		make func(t *testing.T, b *end) setup
	}{
		{"unknown key", 0x00, func(t *testing.T, b *end) setup { return setup{key: 0x777701} }},
		{"stale key byte", 0x00, func(t *testing.T, b *end) setup { return setup{key: b.mr.Key() + 1} }},
		{"out of bounds", 0x01, func(t *testing.T, b *end) setup { return setup{key: b.mr.Key(), off: 65536} }},
		{"offset overflow", 0x01, func(t *testing.T, b *end) setup { return setup{key: b.mr.Key(), off: ^uint64(0) - 3} }},
		{"no rights", 0x02, func(t *testing.T, b *end) setup {
			buf := make([]byte, 64)
			mr, _ := b.pd.RegMR(buf, LocalWrite)
			return setup{key: mr.Key(), buf: buf}
		}},
		{"other protection domain", 0x03, func(t *testing.T, b *end) setup {
			buf := make([]byte, 64)
			mr, _ := b.dev.AllocPD().RegMR(buf, LocalWrite|RemoteWrite|RemoteRead|RemoteAtomic)
			return setup{key: mr.Key(), buf: buf}
		}},
		{"deregistered", 0x00, func(t *testing.T, b *end) setup {
			buf := make([]byte, 64)
			mr, _ := b.pd.RegMR(buf, LocalWrite|RemoteWrite|RemoteRead|RemoteAtomic)
			if err := mr.Dereg(); err != nil {
				t.Fatal(err)
			}
			return setup{key: mr.Key(), buf: buf}
		}},
	}
	ops := []struct {
		name string
		wr   func(a *end, s setup) SendWR
		// completes: the request itself completes with a remote access
		// status (Read, atomics); Writes and Sends completed when sent.
		completes bool
	}{
		{"write", func(a *end, s setup) SendWR {
			return SendWR{ID: 1, Op: WRWrite, SGL: []SGE{{0, 8, a.mr.Key()}}, RemoteKey: s.key, RemoteOffset: s.off}
		}, false},
		{"read", func(a *end, s setup) SendWR {
			return SendWR{ID: 1, Op: WRRead, Flags: Signaled, SGL: []SGE{{0, 8, a.mr.Key()}}, RemoteKey: s.key, RemoteOffset: s.off}
		}, true},
		{"fetch-add", func(a *end, s setup) SendWR {
			return SendWR{ID: 1, Op: WRFetchAdd, Flags: Signaled, SGL: []SGE{{0, 8, a.mr.Key()}}, RemoteKey: s.key, RemoteOffset: s.off &^ 7, CompareAdd: 1}
		}, true},
	}
	for _, c := range cases {
		for _, op := range ops {
			t.Run(c.name+"/"+op.name, func(t *testing.T) {
				a, b := newPair(t, pairOpts{})
				fill(a.buf[:8], 9)
				s := c.make(t, b)
				post(t, a.qp, op.wr(a, s))
				if op.completes {
					wc := wait(t, a.scq)
					if wc.ID != 1 || wc.Status != StatusRemoteAccess {
						t.Fatalf("completion %+v, want remote access error", wc)
					}
				}
				waitState(t, a.qp, StateError)
				var te *TerminateError
				if !errors.As(a.qp.Err(), &te) || !errors.Is(a.qp.Err(), ErrRemoteAccess) || te.Code != c.code {
					t.Fatalf("err %v, want a remote access Terminate with code %#x", a.qp.Err(), c.code)
				}
				if s.buf != nil && !bytes.Equal(s.buf, make([]byte, len(s.buf))) {
					t.Fatal("refused request touched the region")
				}
				if !bytes.Equal(b.buf, make([]byte, len(b.buf))) {
					t.Fatal("refused request touched another region")
				}
			})
		}
	}
}

func TestSendWithoutReceiveIsFatal(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	postRecv(t, a.qp, RecvWR{ID: 50})
	post(t, a.qp, SendWR{ID: 1, Op: WRSend, Flags: Signaled | Inline, Inline: []byte("nobody listens")})
	waitState(t, b.qp, StateError)
	waitState(t, a.qp, StateError)
	if !errors.Is(a.qp.Err(), ErrRemoteOp) {
		t.Fatalf("sender err %v, want ErrRemoteOp", a.qp.Err())
	}
	var te *TerminateError
	if !errors.As(b.qp.Err(), &te) || te.Layer != layerDDP || te.EType != 2 || te.Code != 2 {
		t.Fatalf("receiver err %v, want a DDP untagged no-buffer Terminate", b.qp.Err())
	}
	// The sender's receive is flushed.
	for {
		wc := wait(t, a.rcq)
		if wc.ID == 50 {
			if wc.Status != StatusFlush {
				t.Fatalf("receive %+v, want flushed", wc)
			}
			break
		}
	}
}

func TestReceiveTooShortIsLocalLengthError(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	postRecv(t, b.qp, RecvWR{ID: 5, SGL: []SGE{{0, 4, b.mr.Key()}}})
	post(t, a.qp, SendWR{ID: 1, Op: WRSend, Flags: Inline, Inline: []byte("longer than four")})
	wc := wait(t, b.rcq)
	if wc.ID != 5 || wc.Status != StatusLocalLength {
		t.Fatalf("completion %+v, want local length error", wc)
	}
	waitState(t, a.qp, StateError)
	if !bytes.Equal(b.buf[:8], make([]byte, 8)) {
		t.Fatal("an overlong send was placed")
	}
}

func TestConnectReject(t *testing.T) {
	a, b := newEnd(t, pairOpts{}), newEnd(t, pairOpts{})
	ca, cb := tcpConns(t)
	go func() {
		r, err := ReadRequest(context.Background(), cb)
		if err == nil {
			r.Reject([]byte("go away"))
		}
	}()
	_, err := a.qp.Connect(context.Background(), ca, []byte("hi"))
	var re *RejectError
	if !errors.As(err, &re) || !errors.Is(err, ErrRejected) || string(re.PrivateData) != "go away" {
		t.Fatalf("Connect: %v, want a reject with private data", err)
	}
	if a.qp.State() != StateInit || b.qp.State() != StateInit {
		t.Fatalf("states %v %v after a reject, want init", a.qp.State(), b.qp.State())
	}
	if _, err := a.qp.Connect(context.Background(), ca, make([]byte, MaxPrivateData+1)); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("oversized private data: %v", err)
	}
}

func TestConnectTimesOutAndRejectsBadReplies(t *testing.T) {
	a := newEnd(t, pairOpts{})
	ca, cb := tcpConns(t)
	defer cb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.qp.Connect(ctx, ca, nil); err == nil {
		t.Fatal("Connect to a silent peer succeeded")
	}
	for _, tc := range []struct {
		name  string
		reply []byte
	}{
		{"markers", appendMPA(nil, mpaFrame{reply: true, markers: true, crc: true, rev: 1})},
		{"no CRC", appendMPA(nil, mpaFrame{reply: true, rev: 1})},
		{"revision 2", appendMPA(nil, mpaFrame{reply: true, crc: true, rev: 2})},
		{"request key", appendMPA(nil, mpaFrame{crc: true, rev: 1})},
		{"private data too long", func() []byte {
			b := appendMPA(nil, mpaFrame{reply: true, crc: true, rev: 1})
			binary.BigEndian.PutUint16(b[18:], 300)
			return append(b, make([]byte, 300)...)
		}()},
	} {
		a := newEnd(t, pairOpts{})
		ca, cb := tcpConns(t)
		go func() {
			io.ReadFull(cb, make([]byte, mpaHeaderLen))
			cb.Write(tc.reply)
		}()
		if _, err := a.qp.Connect(context.Background(), ca, nil); !errors.Is(err, ErrMPA) {
			t.Errorf("%s: Connect: %v, want ErrMPA", tc.name, err)
		}
		cb.Close()
	}
}

// rawPeer connects a queue pair to a hand-driven peer: the test writes
// FPDUs and reads what the queue pair answers.
func rawPeer(t *testing.T) (*end, net.Conn) {
	t.Helper()
	b := newEnd(t, pairOpts{})
	ca, cb := tcpConns(t)
	t.Cleanup(func() { ca.Close() })
	errc := make(chan error, 1)
	go func() {
		r, err := ReadRequest(context.Background(), cb)
		if err == nil {
			err = r.Accept(b.qp, nil)
		}
		errc <- err
	}()
	ca.Write(appendMPA(nil, mpaFrame{crc: true, rev: 1}))
	if _, _, err := readMPA(ca, true); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return b, ca
}

// frame builds an FPDU around a DDP segment.
func frame(seg []byte) []byte {
	b := make([]byte, fpduLen(len(seg)))
	copy(b[fpduLenLen:], seg)
	return b[:sealFPDU(b, len(seg))]
}

func sendSegment(op Opcode, msn uint32, data []byte) []byte {
	seg := make([]byte, untaggedHdrLen+len(data))
	putUntagged(seg, op, true, 0, op.queue(), msn, 0)
	copy(seg[untaggedHdrLen:], data)
	return seg
}

// expectTerminate reads FPDUs until a Terminate and then the end of the
// stream, and returns the Terminate's code.
func expectTerminate(t *testing.T, c net.Conn) termCode {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got termCode
	found := false
	for {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			if !found {
				t.Fatalf("stream ended without a Terminate: %v", err)
			}
			return got
		}
		f := make([]byte, fpduLen(int(binary.BigEndian.Uint16(l[:]))))
		copy(f, l[:])
		if _, err := io.ReadFull(c, f[2:]); err != nil {
			t.Fatal(err)
		}
		u, err := checkFPDU(f)
		if err != nil {
			t.Fatalf("queue pair sent a bad FPDU: %v", err)
		}
		s, err := parseSegment(u)
		if err != nil {
			t.Fatal(err)
		}
		if s.op == OpTerminate {
			if found {
				t.Fatal("two Terminates")
			}
			found = true
			got = termCode(binary.BigEndian.Uint16(s.data))
		}
	}
}

func TestCorruptFPDUEndsWithTerminate(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire func(good []byte) []byte
		want termCode
	}{
		{"bad CRC", func(g []byte) []byte { g[len(g)-1] ^= 1; return g }, termMPACRC},
		{"corrupted payload", func(g []byte) []byte { g[20] ^= 0x40; return g }, termMPACRC},
		{"length too short for a header", func(g []byte) []byte { return []byte{0, 3, 1, 2, 3, 4, 5, 6, 7, 8} }, termMPABadLength},
		{"length longer than the FPDU", func(g []byte) []byte {
			binary.BigEndian.PutUint16(g, uint16(len(g)))
			return append(g, make([]byte, 64)...)
		}, termMPACRC},
		{"length shorter than the FPDU", func(g []byte) []byte {
			binary.BigEndian.PutUint16(g, binary.BigEndian.Uint16(g)-4)
			return g
		}, termMPACRC},
		{"bad DDP version", func(g []byte) []byte {
			seg := sendSegment(OpSend, 1, []byte("data"))
			seg[0] = seg[0]&^3 | 2
			return frame(seg)
		}, termDDPVersion},
		{"unknown opcode", func(g []byte) []byte {
			seg := sendSegment(OpSend, 1, nil)
			seg[1] = rdmapVer<<6 | 0xe
			return frame(seg)
		}, termRDMAPOpcode},
		{"bad queue number", func(g []byte) []byte {
			seg := sendSegment(OpSend, 1, nil)
			binary.BigEndian.PutUint32(seg[6:], 9)
			return frame(seg)
		}, termDDPBadQN},
		{"skipped MSN", func(g []byte) []byte { return frame(sendSegment(OpSend, 2, nil)) }, termDDPBadMSN},
		{"unsolicited Read Response", func(g []byte) []byte {
			seg := make([]byte, taggedHdrLen+4)
			putTagged(seg, OpReadResponse, true, 0x101, 0)
			return frame(seg)
		}, termRDMAPOpcode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := rawPeer(t)
			postRecv(t, b.qp, RecvWR{ID: 1, SGL: []SGE{{0, 64, b.mr.Key()}}})
			good := frame(sendSegment(OpSend, 1, []byte("0123456789abcdef")))
			c.Write(tc.wire(good))
			if got := expectTerminate(t, c); got != tc.want {
				t.Fatalf("Terminate %v, want %v", got, tc.want)
			}
			waitState(t, b.qp, StateError)
			if !errors.Is(b.qp.Err(), ErrProtocol) {
				t.Fatalf("err %v, want ErrProtocol", b.qp.Err())
			}
			if wc := wait(t, b.rcq); wc.ID != 1 || (wc.Status != StatusFlush && wc.Status != StatusLocalLength) {
				t.Fatalf("receive %+v, want flushed", wc)
			}
			if !bytes.Equal(b.buf[:64], make([]byte, 64)) {
				t.Fatal("a rejected FPDU was placed")
			}
		})
	}
}

func TestDeregFencesRemoteAccess(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	buf := make([]byte, 1<<16)
	mr, err := b.pd.RegMR(buf, LocalWrite|RemoteWrite|RemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	// Writes stream into the region while it is deregistered: once Dereg
	// returns, the region must not change again.
	fill(a.buf, 1)
	done := make(chan struct{})
	go func() {
		// Until a Write meets the deregistered region and the queue
		// pair fails, bounded in time.
		defer close(done)
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; a.qp.State() == StateRTS && time.Now().Before(deadline); i++ {
			a.qp.PostSend([]SendWR{{Op: WRWrite, SGL: []SGE{{0, 1 << 14, a.mr.Key()}}, RemoteKey: mr.Key(), RemoteOffset: uint64(i%4) << 14}})
		}
	}()
	// Deregister once Writes are landing.
	select {
	case <-b.qp.Placed():
	case <-time.After(10 * time.Second):
		t.Fatal("no Write landed")
	}
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	snap := append([]byte(nil), buf...)
	<-done
	waitState(t, a.qp, StateError)
	if !bytes.Equal(buf, snap) {
		t.Fatal("region changed after Dereg returned")
	}
	if !errors.Is(a.qp.Err(), ErrRemoteAccess) {
		t.Fatalf("err %v, want remote access", a.qp.Err())
	}
	if err := mr.Dereg(); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("second Dereg: %v", err)
	}
}

func TestQPStateTransitions(t *testing.T) {
	e := newEnd(t, pairOpts{})
	if err := e.qp.Modify(StateRTS); !errors.Is(err, ErrState) {
		t.Fatalf("init → rts by Modify: %v", err)
	}
	if err := e.qp.Modify(StateInit); !errors.Is(err, ErrState) {
		t.Fatalf("init → init: %v", err)
	}
	e.qp.Modify(StateError)
	if e.qp.State() != StateError {
		t.Fatal("not in error")
	}
	if err := e.qp.Modify(StateReset); err != nil || e.qp.State() != StateReset {
		t.Fatalf("error → reset: %v, %v", err, e.qp.State())
	}
	if err := e.qp.Modify(StateInit); err != nil {
		t.Fatal(err)
	}
	// A reset queue pair connects again.
	f := newEnd(t, pairOpts{})
	ca, cb := tcpConns(t)
	connect(t, e, f, ca, cb)
	postRecv(t, f.qp, RecvWR{ID: 1})
	post(t, e.qp, SendWR{Op: WRSend})
	waitOK(t, f.rcq, 1, WCRecv)
}

func TestRegMRRejectsBadAccess(t *testing.T) {
	pd := NewDevice().AllocPD()
	if _, err := pd.RegMR(make([]byte, 8), RemoteWrite); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("RemoteWrite without LocalWrite: %v", err)
	}
	if _, err := pd.RegMR(make([]byte, 8), 0x80); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("unknown right: %v", err)
	}
	if _, err := NewDevice().CreateCQ(0); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("CQ of depth 0: %v", err)
	}
	if _, err := pd.CreateQP(QPConfig{}); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("QP without CQs: %v", err)
	}
}

func TestDeregisteredReceiveBufferIsLocalProtectionError(t *testing.T) {
	a, b := newPair(t, pairOpts{})
	buf := make([]byte, 64)
	mr, err := b.pd.RegMR(buf, LocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	postRecv(t, b.qp, RecvWR{ID: 3, SGL: []SGE{{0, 64, mr.Key()}}})
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	post(t, a.qp, SendWR{ID: 1, Op: WRSend, Flags: Inline, Inline: []byte("too late")})
	if wc := wait(t, b.rcq); wc.ID != 3 || wc.Status != StatusLocalProtection {
		t.Fatalf("receive %+v, want a local protection error", wc)
	}
	waitState(t, b.qp, StateError)
	if !bytes.Equal(buf, make([]byte, 64)) {
		t.Fatal("a deregistered buffer was written")
	}
}

// TestFPDUsCheckedThreeAtATime: FPDUs that arrive three or more at once
// have their CRCs checked together (handle3, where there is no fold);
// a bad one among them is still found, the FPDUs before it placed and
// none after it.
func TestFPDUsCheckedThreeAtATime(t *testing.T) {
	const n = 1400 // each FPDU past crc3Min
	for bad := -1; bad < 4; bad++ {
		t.Run(fmt.Sprintf("bad=%d", bad), func(t *testing.T) {
			b, c := rawPeer(t)
			postRecv(t, b.qp, RecvWR{ID: 1, SGL: []SGE{{60000, 64, b.mr.Key()}}})
			want := make([]byte, 4*n)
			var wire []byte
			for i := 0; i < 4; i++ {
				seg := make([]byte, taggedHdrLen+n)
				putTagged(seg, OpWrite, true, b.mr.Key(), uint64(i*n))
				for j := taggedHdrLen; j < len(seg); j++ {
					seg[j] = byte(i*7 + j)
				}
				copy(want[i*n:], seg[taggedHdrLen:])
				f := frame(seg)
				if i == bad {
					f[100] ^= 0x40
				}
				wire = append(wire, f...)
			}
			if bad < 0 {
				c.Write(append(wire, frame(sendSegment(OpSend, 1, []byte("done")))...))
				if wc := wait(t, b.rcq); wc.ID != 1 || wc.Status != StatusSuccess {
					t.Fatalf("receive %+v", wc)
				}
				if !bytes.Equal(b.buf[:4*n], want) {
					t.Fatal("the four Writes were not placed")
				}
				return
			}
			c.Write(wire)
			if got := expectTerminate(t, c); got != termMPACRC {
				t.Fatalf("Terminate %v, want %v", got, termMPACRC)
			}
			waitState(t, b.qp, StateError)
			if !bytes.Equal(b.buf[:bad*n], want[:bad*n]) {
				t.Fatal("a good FPDU before the bad one was not placed")
			}
			if !bytes.Equal(b.buf[bad*n:4*n], make([]byte, (4-bad)*n)) {
				t.Fatal("the bad FPDU, or one after it, was placed")
			}
		})
	}
}
