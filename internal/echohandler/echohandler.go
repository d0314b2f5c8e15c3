// Package echohandler holds the echo and discard servers on ustack's
// run-to-completion handler API (stack.Handler), which cmd/ustack-echo and
// the benchmark share. (Package echo, which holds the net.Conn servers and
// the clients, is imported by package stack's tests, so it cannot import
// stack.)
package echohandler

import "github.com/ustack-dev/ustack/stack"

// Echo is the echo server on ustack's run-to-completion API: the worker
// that processed a request writes it back from OnTraffic, with no
// goroutine per connection.
type Echo struct{}

// OnOpen implements stack.Handler.
func (Echo) OnOpen(*stack.Stream) {}

// OnTraffic implements stack.Handler: it writes b back. What the send
// buffer does not take waits in the stream (stack.Stream.Write).
func (Echo) OnTraffic(s *stack.Stream, b []byte) {
	if _, err := s.Write(b); err != nil {
		s.Close()
	}
}

// OnClose implements stack.Handler.
func (Echo) OnClose(*stack.Stream, error) {}

// Discard is the discard server on the handler API: it drops what
// it receives.
type Discard struct{}

// OnOpen implements stack.Handler.
func (Discard) OnOpen(*stack.Stream) {}

// OnTraffic implements stack.Handler.
func (Discard) OnTraffic(*stack.Stream, []byte) {}

// OnClose implements stack.Handler.
func (Discard) OnClose(*stack.Stream, error) {}
