package qp_test

import (
	"net"
	"testing"

	"github.com/ustack-dev/ustack/internal/qptest"
)

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
			a, b := qptest.NewSide(t, pp.OnInputA), qptest.NewSide(t, pp.OnInputB)
			ca, cb := tc.dial()
			pp.Play(t, a, b, ca, cb)
		})
	}
}
