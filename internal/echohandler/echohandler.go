// Package echohandler holds the echo and discard servers on ustack's
// run-to-completion handler API (stack.Handler), which cmd/ustack-echo and
// the benchmark share, and the ping-pong and rate clients on it. (Package
// echo, which holds the net.Conn servers and clients, is imported by
// package stack's tests, so it cannot import stack.)
package echohandler

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/hist"
	"github.com/ustack-dev/ustack/stack"
)

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

// Discard is echo.ServeDiscard on the handler API, the server side of
// echo.Bulk: it counts what it receives and, at the peer's FIN, writes the
// count back (8 bytes, big-endian) and closes.
type Discard struct{}

// OnOpen implements stack.Handler.
func (Discard) OnOpen(s *stack.Stream) { s.SetContext(new(int64)) }

// OnTraffic implements stack.Handler.
func (Discard) OnTraffic(s *stack.Stream, b []byte) { *s.Context().(*int64) += int64(len(b)) }

// OnEOF implements stack.EOFHandler: the count, then close.
func (Discard) OnEOF(s *stack.Stream) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(*s.Context().(*int64)))
	s.Write(b[:])
	s.Close()
}

// OnClose implements stack.Handler.
func (Discard) OnClose(*stack.Stream, error) {}

// PingPong is echo.PingPong's workload with the client on the handler API:
// the echo's arrival sends the next request from OnTraffic, on the client
// stack's worker, so neither end has a goroutine on the request's path.
// It dials address over s and stops as echo.PingPong does; each message
// carries its round number, and an echo that differs fails the run.
func PingPong(ctx context.Context, s *stack.Stack, network, address string, cfg echo.PingPongConfig) (*hist.Histogram, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	p := &pinger{cfg: cfg, hist: echo.NewHistogram(), done: make(chan error, 1),
		msg: make([]byte, cfg.Size), buf: make([]byte, cfg.Size)}
	for i := range p.msg {
		p.msg[i] = byte(i)
	}
	st, err := s.DialHandler(ctx, network, address, p)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { p.cancel.Store(true); st.Wake() })
	defer stop()
	err = <-p.done
	if err == nil {
		err = ctx.Err()
	}
	return p.hist, err
}

// pinger is PingPong's handler. Its fields are the worker's, but for
// cancel, and hist and done, which PingPong reads once done has fired.
type pinger struct {
	cfg      echo.PingPongConfig
	hist     *hist.Histogram
	msg, buf []byte
	got      int
	round    int
	t0       time.Time
	deadline time.Time
	cancel   atomic.Bool
	err      error
	done     chan error
}

func (p *pinger) OnOpen(s *stack.Stream) { p.send(s, time.Now()) }

// send sends the next request; now is the clock's time (the previous
// echo's arrival, read once for both).
func (p *pinger) send(s *stack.Stream, now time.Time) {
	if len(p.msg) >= 8 {
		binary.BigEndian.PutUint64(p.msg, uint64(p.round))
	}
	p.got = 0
	p.t0 = now
	if _, err := s.Write(p.msg); err != nil {
		p.fail(s, fmt.Errorf("write: %w", err))
	}
}

func (p *pinger) fail(s *stack.Stream, err error) {
	if p.err == nil {
		p.err = err
	}
	s.Close()
}

func (p *pinger) OnTraffic(s *stack.Stream, b []byte) {
	if p.cancel.Load() {
		p.fail(s, context.Canceled)
		return
	}
	for len(b) > 0 {
		n := copy(p.buf[p.got:], b)
		p.got += n
		b = b[n:]
		if p.got < len(p.buf) {
			return
		}
		if len(b) > 0 || !bytes.Equal(p.buf, p.msg) {
			p.fail(s, fmt.Errorf("round trip %d: %w", p.round, echo.ErrMismatch))
			return
		}
		now := time.Now()
		if p.round >= p.cfg.Warmup {
			p.hist.RecordValue(now.Sub(p.t0).Nanoseconds())
			if p.deadline.IsZero() && p.cfg.Duration > 0 {
				p.deadline = now.Add(p.cfg.Duration)
			}
			if p.cfg.Count > 0 && int(p.hist.TotalCount()) >= p.cfg.Count || !p.deadline.IsZero() && now.After(p.deadline) {
				s.Close()
				return
			}
		}
		p.round++
		p.send(s, now)
	}
}

func (p *pinger) OnClose(s *stack.Stream, err error) {
	if p.err == nil && err != nil {
		p.err = fmt.Errorf("connection: %w", err)
	}
	if errors.Is(p.err, context.Canceled) {
		p.err = nil // PingPong reports ctx's error
	}
	p.done <- p.err
}

// Rate is echo.Rate's workload with every connection on the handler API:
// each connection's echo arriving sends its next Pipeline requests from
// OnTraffic. It returns the completed requests and the measured time.
func Rate(ctx context.Context, s *stack.Stack, cfg echo.RateConfig) (int64, time.Duration, error) {
	cfg = cfg.WithDefaults()
	r := &rater{req: make([]byte, cfg.Size*cfg.Pipeline), pipeline: cfg.Pipeline, closed: make(chan error, cfg.Conns)}
	var streams []*stack.Stream
	defer func() {
		r.stop.Store(true)
		for _, st := range streams {
			st.Wake()
		}
		for range streams {
			<-r.closed
		}
	}()
	for i := 0; i < cfg.Conns; i++ {
		st, err := s.DialHandler(ctx, cfg.Network, cfg.Address, r)
		if err != nil {
			return 0, 0, fmt.Errorf("connection %d: %w", i, err)
		}
		streams = append(streams, st)
	}
	wait := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case err := <-r.failed():
			return err
		}
	}
	err := wait(cfg.Warmup)
	start := time.Now()
	if err == nil {
		r.counting.Store(true)
		err = wait(cfg.Duration)
	}
	elapsed := time.Since(start)
	r.counting.Store(false)
	return r.done.Load(), elapsed, err
}

// rater is Rate's handler, shared by its connections; a connection's
// count of echoed bytes is its Stream's context.
type rater struct {
	req      []byte
	pipeline int
	counting atomic.Bool
	stop     atomic.Bool
	done     atomic.Int64
	closed   chan error // one per connection, at OnClose
	errOnce  sync.Once
	errc     chan error
}

func (r *rater) failed() chan error {
	r.errOnce.Do(func() { r.errc = make(chan error, 1) })
	return r.errc
}

func (r *rater) fail(err error) {
	select {
	case r.failed() <- err:
	default:
	}
}

func (r *rater) OnOpen(s *stack.Stream) {
	s.SetContext(new(int))
	if _, err := s.Write(r.req); err != nil {
		r.fail(err)
		s.Close()
	}
}

func (r *rater) OnTraffic(s *stack.Stream, b []byte) {
	if r.stop.Load() {
		s.Close()
		return
	}
	got := s.Context().(*int)
	*got += len(b)
	for *got >= len(r.req) {
		*got -= len(r.req)
		if r.counting.Load() {
			r.done.Add(int64(r.pipeline))
		}
		if _, err := s.Write(r.req); err != nil {
			r.fail(err)
			s.Close()
			return
		}
	}
}

func (r *rater) OnClose(s *stack.Stream, err error) {
	if !r.stop.Load() {
		if err == nil {
			err = errors.New("connection closed")
		}
		r.fail(err)
	}
	r.closed <- err
}
