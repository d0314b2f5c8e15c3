package qp

import (
	"bytes"
	"testing"
)

// TestPostFast: from an OnInput handler, an unsignaled Send or Write
// with the send queue idle is encoded and written at once without a
// send-queue slot (postFast); a signaled one, or one posted behind a
// request the queue holds back, takes a slot and keeps its order.
func TestPostFast(t *testing.T) {
	x, y := wirePair(t)
	for i := range x.buf[:64] {
		x.buf[i] = byte(i + 1)
	}
	var posted []error
	post := func(wrs ...SendWR) func() {
		return func() {
			_, err := x.q.PostSend(wrs)
			posted = append(posted, err)
		}
	}
	// run calls post as a handler of x's does.
	run := func(post func()) {
		x.q.inHandler.Store(true)
		post()
		x.q.inHandler.Store(false)
	}

	// Unsignaled Write: no slot, on the wire at once, placed intact.
	run(post(x.wr[0]))
	if x.q.tail != 0 || len(x.c.out) == 0 || posted[0] != nil {
		t.Fatalf("unsignaled Write: %d slots used, %d bytes out, %v", x.q.tail, len(x.c.out), posted[0])
	}
	x.feed(y)
	if !bytes.Equal(y.buf[64:], x.buf[:64]) || y.q.Err() != nil {
		t.Fatalf("placed %v, want %v (%v)", y.buf[64:], x.buf[:64], y.q.Err())
	}

	// Signaled: through a slot, with its completion.
	sig := x.wr[0]
	sig.ID, sig.Flags = 7, Signaled
	run(post(sig))
	var wc [2]WC
	if x.q.tail != 1 || x.cq.Poll(wc[:]) != 1 || wc[0].ID != 7 || wc[0].Status != StatusSuccess {
		t.Fatalf("signaled Write: %d slots used, completion %+v", x.q.tail, wc[0])
	}
	x.feed(y)

	// A Read holds a fenced Write back (the Read's response has not
	// come); an unsignaled Write posted after the fenced one must not
	// overtake it, so it takes a slot too, and nothing goes out.
	rd := SendWR{ID: 8, Op: WRRead, Flags: Signaled, SGL: []SGE{{0, 8, x.mr.Key()}}, RemoteKey: y.mr.Key(), RemoteOffset: 64}
	fenced := x.wr[0]
	fenced.Flags = Fence
	run(post(rd, fenced))
	x.feed(y) // the Read request; y answers (respondInline)
	if len(x.c.out) != 0 {
		t.Fatalf("%d bytes out behind a fenced Write", len(x.c.out))
	}
	run(post(x.wr[0]))
	if x.q.tail != 4 || x.q.sent != 2 || len(x.c.out) != 0 {
		t.Fatalf("behind a fence: tail %d, sent %d, %d bytes out; want 4, 2, 0", x.q.tail, x.q.sent, len(x.c.out))
	}
	// The Read Response releases both Writes, in order, through the
	// transmit goroutine (woken; there is none here: the test pumps).
	y.feed(x)
	select {
	case <-x.q.kick:
	default:
		t.Fatal("the Read Response did not wake the transmit goroutine")
	}
	x.q.txMu.Lock()
	x.q.pumpLocked(true)
	x.q.txMu.Unlock()
	if x.q.sent != 4 || len(x.c.out) == 0 {
		t.Fatalf("after the Read Response: sent %d, %d bytes out", x.q.sent, len(x.c.out))
	}
	for _, err := range posted {
		if err != nil {
			t.Fatal(err)
		}
	}
	if x.q.Err() != nil || y.q.Err() != nil {
		t.Fatal(x.q.Err(), y.q.Err())
	}
}

// TestPostFastSignaledOrder: a signaled Write posted from a handler
// behind an outstanding Read goes out at once, but its completion waits
// for the Read's: completions keep the order of posting.
func TestPostFastSignaledOrder(t *testing.T) {
	x, y := wirePair(t)
	rd := SendWR{ID: 1, Op: WRRead, Flags: Signaled, SGL: []SGE{{0, 8, x.mr.Key()}}, RemoteKey: y.mr.Key(), RemoteOffset: 64}
	if _, err := x.q.PostSend([]SendWR{rd}); err != nil {
		t.Fatal(err)
	}
	x.feed(y) // y answers the Read Request; its response waits in y's out
	wr := x.wr[0]
	wr.ID, wr.Flags = 2, Signaled
	x.q.inHandler.Store(true)
	_, err := x.q.PostSend([]SendWR{wr})
	x.q.inHandler.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.c.out) == 0 || x.q.sent != x.q.tail {
		t.Fatalf("signaled Write behind a Read: %d bytes out, sent %d of %d", len(x.c.out), x.q.sent, x.q.tail)
	}
	var wc [4]WC
	if n := x.cq.Poll(wc[:]); n != 0 {
		t.Fatalf("%d completions before the Read's response, first %+v", n, wc[0])
	}
	y.feed(x) // the Read Response
	if n := x.cq.Poll(wc[:]); n != 2 || wc[0].ID != 1 || wc[1].ID != 2 ||
		wc[0].Status != StatusSuccess || wc[1].Status != StatusSuccess {
		t.Fatalf("completions %+v, want the Read's (1) then the Write's (2), both successful", wc[:n])
	}
	x.feed(y)
	if x.q.Err() != nil || y.q.Err() != nil {
		t.Fatal(x.q.Err(), y.q.Err())
	}
}
