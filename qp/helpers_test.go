package qp

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// end is one side of a connected test pair.
type end struct {
	dev    *Device
	pd     *PD
	scq    *CQ
	rcq    *CQ
	qp     *QP
	mr     *MR // 64 KiB, all rights
	buf    []byte
	srq    *SRQ
	peerPD []byte
}

type pairOpts struct {
	cfg  func(*QPConfig)
	cqN  int
	srq  bool
	dial func(t testing.TB) (a, b net.Conn) // default: loopback kernel TCP
}

// tcpConns returns the two ends of a loopback kernel TCP connection.
func tcpConns(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return a, r.c
}

func newEnd(t testing.TB, o pairOpts) *end {
	t.Helper()
	e := &end{dev: NewDevice()}
	e.pd = e.dev.AllocPD()
	n := o.cqN
	if n == 0 {
		n = 256
	}
	var err error
	if e.scq, err = e.dev.CreateCQ(n); err != nil {
		t.Fatal(err)
	}
	if e.rcq, err = e.dev.CreateCQ(n); err != nil {
		t.Fatal(err)
	}
	e.buf = make([]byte, 64<<10)
	if e.mr, err = e.pd.RegMR(e.buf, LocalWrite|RemoteWrite|RemoteRead|RemoteAtomic); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultQPConfig(e.scq, e.rcq)
	if o.srq {
		if e.srq, err = e.pd.CreateSRQ(64, 4); err != nil {
			t.Fatal(err)
		}
		cfg.SRQ = e.srq
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	if e.qp, err = e.pd.CreateQP(cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.qp.Modify(StateInit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.qp.Close() })
	return e
}

// connect connects a (initiator) and b (responder) over a and b's conns.
func connect(t testing.TB, a, b *end, ca, cb net.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		r, err := ReadRequest(ctx, cb)
		if err != nil {
			errc <- err
			return
		}
		b.peerPD = r.PrivateData()
		errc <- r.Accept(b.qp, []byte("reply"))
	}()
	pd, err := a.qp.Connect(ctx, ca, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	a.peerPD = pd
}

func newPair(t testing.TB, o pairOpts) (a, b *end) {
	t.Helper()
	a, b = newEnd(t, o), newEnd(t, o)
	dial := o.dial
	if dial == nil {
		dial = tcpConns
	}
	ca, cb := dial(t)
	connect(t, a, b, ca, cb)
	return a, b
}

// wait polls cq until it yields one completion or 5 s pass.
func wait(t testing.TB, cq *CQ) WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wc [1]WC
	for {
		if cq.Poll(wc[:]) == 1 {
			return wc[0]
		}
		if err := cq.Wait(ctx); err != nil {
			t.Fatalf("waiting for a completion: %v", err)
		}
	}
}

// waitOK waits for a successful completion with id.
func waitOK(t testing.TB, cq *CQ, id uint64, op WCOpcode) WC {
	t.Helper()
	wc := wait(t, cq)
	if wc.ID != id || wc.Status != StatusSuccess || wc.Op != op {
		t.Fatalf("completion %+v, want id %d %v success", wc, id, op)
	}
	return wc
}

// noCompletion asserts cq stays empty for a moment.
func noCompletion(t testing.TB, cq *CQ) {
	t.Helper()
	time.Sleep(20 * time.Millisecond)
	var wc [1]WC
	if cq.Poll(wc[:]) != 0 {
		t.Fatalf("unexpected completion %+v", wc[0])
	}
}

func waitState(t testing.TB, q *QP, want State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.State() != want {
		if time.Now().After(deadline) {
			t.Fatalf("queue pair in %v, want %v (err %v)", q.State(), want, q.Err())
		}
		time.Sleep(time.Millisecond)
	}
}

func post(t testing.TB, q *QP, wrs ...SendWR) {
	t.Helper()
	if n, err := q.PostSend(wrs); err != nil || n != len(wrs) {
		t.Fatalf("PostSend: posted %d of %d: %v", n, len(wrs), err)
	}
}

func postRecv(t testing.TB, q *QP, wrs ...RecvWR) {
	t.Helper()
	if n, err := q.PostRecv(wrs); err != nil || n != len(wrs) {
		t.Fatalf("PostRecv: posted %d of %d: %v", n, len(wrs), err)
	}
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

func isErr(err, target error) bool { return errors.Is(err, target) }

func sleepMs() { time.Sleep(time.Millisecond) }
