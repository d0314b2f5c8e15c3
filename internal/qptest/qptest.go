// Package qptest drives queue pairs from their OnInput handlers, for the
// tests of package qp (kernel TCP, net.Pipe) and of package stack
// (ustack's worker): a ping-pong of RDMA Writes in which each side's
// handler answers the other's Write as it lands, with messages small
// enough to go out from the handler and too large to (left to the
// queue pair's transmit goroutine).
package qptest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/qp"
)

// Side is one end: its queue pair and a registered region of at least
// RegionSize bytes with remote write rights.
type Side struct {
	QP  *qp.QP
	MR  *qp.MR
	Buf []byte
}

// NewSide returns a queue pair in Init, with one CQ for both directions,
// a region of RegionSize bytes with local and remote write rights, and
// onInput as its OnInput handler; it is closed when tb ends.
func NewSide(tb testing.TB, onInput func()) Side {
	tb.Helper()
	dev := qp.NewDevice()
	pd := dev.AllocPD()
	cq, err := dev.CreateCQ(256)
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, RegionSize)
	mr, err := pd.RegMR(buf, qp.LocalWrite|qp.RemoteWrite)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := qp.DefaultQPConfig(cq, cq)
	cfg.OnInput = onInput
	q, err := pd.CreateQP(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := q.Modify(qp.StateInit); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	return Side{QP: q, MR: mr, Buf: buf}
}

// Connect connects a, the initiator over ca, to b over cb, the other end
// of the same stream.
func Connect(ctx context.Context, a, b *qp.QP, ca, cb net.Conn) error {
	errc := make(chan error, 1)
	go func() {
		r, err := qp.ReadRequest(ctx, cb)
		if err == nil {
			err = r.Accept(b, nil)
		}
		errc <- err
	}()
	_, err := a.Connect(ctx, ca, nil)
	if berr := <-errc; err == nil {
		err = berr
	}
	return err
}

// Link connects a, the initiator, to b over a stream that dial opens and
// ln accepts, a sending private data req and b replying with resp; each
// must arrive intact (b rejects another request). It fails tb if a step
// fails or takes more than 10 s.
func Link(tb testing.TB, a, b *qp.QP, dial func(context.Context) (net.Conn, error), ln net.Listener, req, resp []byte) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		r, err := qp.NewListener(ln).Accept(ctx)
		switch {
		case err != nil:
		case !bytes.Equal(r.PrivateData(), req):
			err = fmt.Errorf("request private data %q, want %q", r.PrivateData(), req)
			r.Reject(nil)
		default:
			err = r.Accept(b, resp)
		}
		errc <- err
	}()
	c, err := dial(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	pd, err := a.Connect(ctx, c, req)
	if err != nil {
		tb.Fatal(err)
	}
	if err := <-errc; err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(pd, resp) {
		tb.Fatalf("reply private data %q, want %q", pd, resp)
	}
}

// RegionSize is the region each side needs: an inbox and an outbox of
// the largest message, and a trailer.
const RegionSize = 2*maxMsg + 64

// Sizes are the messages' sizes, round after round: from one FPDU to
// more than a queue pair's transmit buffer holds.
var Sizes = []int{64, 1, 100 << 10, 64, maxMsg, 1448, 200 << 10}

const maxMsg = 300 << 10

const inbox = 0

// PingPong is a run: side A writes a message into B's inbox; B's
// handler, seeing its last byte land, writes it back into A's inbox; A's
// handler checks it and writes the next, for Rounds rounds.
type PingPong struct {
	Rounds int

	mu     sync.Mutex
	a, b   Side
	round  int
	err    error
	done   chan struct{}
	closed bool
}

// New returns a ping-pong of rounds rounds; set OnInputA and OnInputB as
// the sides' QPConfig.OnInput before creating them.
func New(rounds int) *PingPong { return &PingPong{Rounds: rounds, done: make(chan struct{})} }

func tag(round int) byte { return byte(round%251) + 1 }

func size(round int) int { return Sizes[round%len(Sizes)] }

// message fills A's outbox with round's message.
func (p *PingPong) message(round int) []byte {
	n := size(round)
	out := p.a.Buf[maxMsg : maxMsg+n]
	for i := range out {
		out[i] = byte(round*31 + i*7)
	}
	out[n-1] = tag(round)
	return out
}

func (p *PingPong) finish(err error) {
	if p.closed {
		return
	}
	p.err, p.closed = err, true
	close(p.done)
}

func (p *PingPong) send(from Side, to uint32, data []byte) error {
	wr := qp.SendWR{Op: qp.WRWrite, SGL: []qp.SGE{{Offset: maxMsg, Len: uint32(len(data)), Key: from.MR.Key()}}, RemoteKey: to, RemoteOffset: inbox}
	_, err := from.QP.PostSend([]qp.SendWR{wr})
	return err
}

// OnInputA is A's handler: it checks the message bounced back and sends
// the next.
func (p *PingPong) OnInputA() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.a.QP == nil {
		return
	}
	n := size(p.round)
	if p.a.Buf[inbox+n-1] != tag(p.round) {
		return
	}
	if want := p.message(p.round); !bytes.Equal(p.a.Buf[inbox:inbox+n], want) {
		p.finish(fmt.Errorf("round %d: the %d bytes bounced back differ", p.round, n))
		return
	}
	clear(p.a.Buf[inbox:maxMsg]) // a tag seen there is the next message's
	p.round++
	if p.round == p.Rounds {
		p.finish(nil)
		return
	}
	if err := p.send(p.a, p.b.MR.Key(), p.message(p.round)); err != nil {
		p.finish(fmt.Errorf("round %d: A's PostSend from its handler: %w", p.round, err))
	}
}

// OnInputB is B's handler: it bounces each message back as it lands.
func (p *PingPong) OnInputB() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.b.QP == nil {
		return
	}
	n := size(p.round)
	if p.b.Buf[inbox+n-1] != tag(p.round) {
		return
	}
	copy(p.b.Buf[maxMsg:], p.b.Buf[inbox:inbox+n])
	// Only this goroutine places into B's region, and the next message
	// comes after the bounce: a tag seen there is the next message's.
	clear(p.b.Buf[inbox:maxMsg])
	if err := p.send(p.b, p.a.MR.Key(), p.b.Buf[maxMsg:maxMsg+n]); err != nil {
		p.finish(fmt.Errorf("round %d: B's PostSend from its handler: %w", p.round, err))
	}
}

// Run plays the rounds between connected sides a and b and returns the
// first thing that went wrong.
func (p *PingPong) Run(ctx context.Context, a, b Side) error {
	p.mu.Lock()
	p.a, p.b = a, b
	first := p.message(0)
	err := p.send(a, b.MR.Key(), first)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Errorf("round %d of %d: %w (A: %v, B: %v)", p.round, p.Rounds, ctx.Err(), a.QP.Err(), b.QP.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Play connects a (over ca) to b (over cb) and runs the rounds, failing
// tb if anything goes wrong or it takes more than 30 seconds.
func (p *PingPong) Play(tb testing.TB, a, b Side, ca, cb net.Conn) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Connect(ctx, a.QP, b.QP, ca, cb); err != nil {
		tb.Fatal(err)
	}
	if err := p.Run(ctx, a, b); err != nil {
		tb.Fatal(err)
	}
}
