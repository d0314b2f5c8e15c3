package qp_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/qptest"
	"github.com/ustack-dev/ustack/qp"
)

// handlerSide makes a queue pair whose OnInput is onInput, with a region
// for qptest.
func handlerSide(t *testing.T, onInput func()) qptest.Side {
	t.Helper()
	dev := qp.NewDevice()
	pd := dev.AllocPD()
	cq, err := dev.CreateCQ(256)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, qptest.RegionSize)
	mr, err := pd.RegMR(buf, qp.LocalWrite|qp.RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	cfg := qp.DefaultQPConfig(cq, cq)
	cfg.OnInput = onInput
	q, err := pd.CreateQP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Modify(qp.StateInit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return qptest.Side{QP: q, MR: mr, Buf: buf}
}

// connectSides connects a (initiator over ca) and b (over cb).
func connectSides(t *testing.T, a, b qptest.Side, ca, cb net.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		r, err := qp.ReadRequest(ctx, cb)
		if err == nil {
			err = r.Accept(b.QP, nil)
		}
		errc <- err
	}()
	if _, err := a.QP.Connect(ctx, ca, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestOnInputPingPong: handlers answer each other's Writes as they land,
// posting from the engine's goroutine: messages that the connection
// takes at once go out from there, larger ones (up to more than the
// transmit buffer) are finished by the transmit goroutine, and every
// byte arrives intact and in order over kernel TCP and over net.Pipe
// (which cannot write without waiting: everything goes through the
// transmit goroutine).
func TestOnInputPingPong(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func() (net.Conn, net.Conn)
	}{
		{"tcp", func() (net.Conn, net.Conn) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ch := make(chan net.Conn, 1)
			go func() {
				c, _ := ln.Accept()
				ch <- c
			}()
			a, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			return a, <-ch
		}},
		{"pipe", func() (net.Conn, net.Conn) { return net.Pipe() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := qptest.New(300)
			a, b := handlerSide(t, pp.OnInputA), handlerSide(t, pp.OnInputB)
			ca, cb := tc.dial()
			connectSides(t, a, b, ca, cb)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := pp.Run(ctx, a, b); err != nil {
				t.Fatal(err)
			}
		})
	}
}
