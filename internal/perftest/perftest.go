// Package perftest is ustack-perf's measurements, after perftest's
// ib_write_lat, ib_send_lat, ib_read_lat, ib_atomic_lat, ib_write_bw and
// ib_send_bw, over ustack's queue pairs: the client (Run) drives, the
// server (Serve) takes its part from the parameters in the connect
// request's private data. The benchmark (bench/) runs write_lat beside
// its TCP ping-pong.
package perftest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ustack-dev/ustack/qp"
)

// The tests, after perftest's ib_write_lat, ib_send_lat, ib_read_lat,
// ib_atomic_lat, ib_write_bw and ib_send_bw. The client drives; the
// server takes its part from the parameters in the connect request's
// private data.
var TestNames = []string{"write_lat", "send_lat", "read_lat", "atomic_lat", "write_bw", "send_bw"}

// Params are a test's; they travel in the MPA request's private data.
type Params struct {
	Test  string // one of TestNames
	Size  int    // message bytes
	Iters int    // measured iterations (after a warm-up of 100)
	// Handler runs write_lat from the queue pairs' OnInput handlers, on
	// both ends: each Write is answered where it lands (ustack's worker,
	// or the queue pair's reader goroutine over kernel TCP) instead of by
	// an application goroutine that polls memory and blocks between
	// polls. Only write_lat has it.
	Handler bool
	// PostList is how many requests the bandwidth tests' client posts
	// with one PostSend (perftest's --post_list; 0 means 1). Over a
	// kernel socket the queue pair writes a posted list with one system
	// call. The client's alone: it does not travel.
	PostList int
	rkey     uint32 // the sender's region
}

func (prm Params) encode() []byte {
	return []byte(fmt.Sprintf("ustack-perf test=%s size=%d iters=%d rkey=%d handler=%v", prm.Test, prm.Size, prm.Iters, prm.rkey, prm.Handler))
}

func parseParams(b []byte) (Params, error) {
	var p Params
	f := strings.Fields(string(b))
	if len(f) != 6 || f[0] != "ustack-perf" {
		return p, fmt.Errorf("not a ustack-perf request: %q", b)
	}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "test":
			p.Test = v
		case "handler":
			h, err := strconv.ParseBool(v)
			if err != nil {
				return p, fmt.Errorf("%s: %w", k, err)
			}
			p.Handler = h
		default:
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return p, fmt.Errorf("%s: %w", k, err)
			}
			switch k {
			case "size":
				p.Size = int(n)
			case "iters":
				p.Iters = int(n)
			case "rkey":
				p.rkey = uint32(n)
			}
		}
	}
	return p, p.Validate()
}

// Validate reports what is wrong with prm, if anything.
func (prm Params) Validate() error {
	if !slices.Contains(TestNames, prm.Test) {
		return fmt.Errorf("test %q: want one of %s", prm.Test, strings.Join(TestNames, ", "))
	}
	if prm.Size < 1 || prm.Size > 1<<20 {
		return fmt.Errorf("size %d: want 1..1048576", prm.Size)
	}
	if prm.Test == "atomic_lat" && prm.Size != 8 {
		return errors.New("atomic_lat works on 8 bytes: -size 8")
	}
	if prm.Handler && prm.Test != "write_lat" {
		return fmt.Errorf("handler: only write_lat runs from handlers, not %s", prm.Test)
	}
	if prm.Iters < 1 || prm.Iters > 100_000_000 {
		return fmt.Errorf("iters %d: want 1..10^8", prm.Iters)
	}
	if prm.PostList < 0 || prm.PostList > cqMod {
		return fmt.Errorf("post list %d: want 1..%d", prm.PostList, cqMod)
	}
	return nil
}

// Memory layout of each end's region: the send area, the receive area,
// then one 8-byte word for the send_bw credit.
const (
	txDepth = 128 // requests in flight (bw tests)
	rxDepth = 512 // receives posted (send tests)
	cqMod   = 32  // one signaled request in cqMod (bw tests)
	warmup  = 100
)

type layout struct{ size, recvOff, creditOff, total int }

func layoutFor(size int) layout {
	a := (size + 63) &^ 63
	return layout{size: size, recvOff: a, creditOff: 2 * a, total: 2*a + 64}
}

// peer is one end of a test: its queue pair, region and the peer's key.
type peer struct {
	q     *qp.QP
	scq   *qp.CQ
	rcq   *qp.CQ
	mr    *qp.MR
	buf   []byte
	lay   layout
	rkey  uint32
	ctx   context.Context
	wc    [64]qp.WC
	timer *time.Timer // waitFor's, reused
	// onInput is the queue pair's OnInput handler when set (before the
	// queue pair connects).
	onInput func()
	lat     *latHandler  // write_lat from handlers
	sendWR  [1]qp.SendWR // its Write, reused
}

// setSendWR prepares the Write of the send area into the peer's receive
// area that handler rounds post.
func (p *peer) setSendWR() {
	p.sendWR[0] = qp.SendWR{Op: qp.WRWrite, SGL: p.sendSGE(), RemoteKey: p.rkey, RemoteOffset: uint64(p.lay.recvOff)}
}

func newPeer(ctx context.Context, size int) (*peer, error) {
	dev := qp.NewDevice()
	pd := dev.AllocPD()
	p := &peer{ctx: ctx, lay: layoutFor(size)}
	p.buf = make([]byte, p.lay.total)
	var err error
	if p.mr, err = pd.RegMR(p.buf, qp.LocalWrite|qp.RemoteWrite|qp.RemoteRead|qp.RemoteAtomic); err != nil {
		return nil, err
	}
	if p.scq, err = dev.CreateCQ(4 * txDepth); err != nil {
		return nil, err
	}
	if p.rcq, err = dev.CreateCQ(2 * rxDepth); err != nil {
		return nil, err
	}
	cfg := qp.DefaultQPConfig(p.scq, p.rcq)
	cfg.SendDepth, cfg.RecvDepth, cfg.MaxInline = 2*txDepth, rxDepth, 256
	cfg.OnInput = func() {
		if h := p.onInput; h != nil {
			h()
		}
	}
	if p.q, err = pd.CreateQP(cfg); err != nil {
		return nil, err
	}
	if err := p.q.Modify(qp.StateInit); err != nil {
		return nil, err
	}
	return p, nil
}

// SpinLimit is how many times a waiter checks memory or a CQ before it
// blocks (ustack-perf -spin).
// Spinning longer only helps when a CPU is free for the queue pair's
// goroutines; on a small machine blocking lets them run.
var SpinLimit = 64

// waitFor returns once cond holds: it checks SpinLimit times, then blocks
// on ch (a CQ's or the queue pair's notification) between checks.
func (p *peer) waitFor(cond func() bool, ch func() <-chan struct{}) error {
	for i := 0; i < SpinLimit; i++ {
		if cond() {
			return nil
		}
	}
	// cond may consume (a CQ poll): evaluate it once per round. The timer
	// (reused: no allocation per wait) only rechecks for a failure.
	if p.timer == nil {
		p.timer = time.NewTimer(time.Second)
	} else {
		p.timer.Reset(time.Second)
	}
	timer := p.timer
	for {
		failed := p.q.Err()
		if cond() {
			return nil
		}
		if failed != nil {
			return failed
		}
		select {
		case <-ch():
		case <-timer.C:
			timer.Reset(time.Second)
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
}

// poll returns the next completion of cq.
func (p *peer) poll(cq *qp.CQ) (qp.WC, error) {
	if err := p.waitFor(func() bool { return cq.Poll(p.wc[:1]) == 1 }, func() <-chan struct{} { return cq.Notify() }); err != nil {
		return qp.WC{}, err
	}
	wc := p.wc[0]
	if wc.Status != qp.StatusSuccess {
		return wc, fmt.Errorf("completion %d: %v (%v)", wc.ID, wc.Status, p.q.Err())
	}
	return wc, nil
}

// waitByte waits until the receive area's last byte is v.
func (p *peer) waitByte(v byte) error {
	at := &p.buf[p.lay.recvOff+p.lay.size-1]
	return p.waitFor(func() bool { return loadByte(at) == v }, p.q.Placed)
}

func (p *peer) postRecvs(n int) error {
	sge := []qp.SGE{{Offset: uint64(p.lay.recvOff), Len: uint32(p.lay.size), Key: p.mr.Key()}}
	for i := 0; i < n; i++ {
		if _, err := p.q.PostRecv([]qp.RecvWR{{ID: uint64(i), SGL: sge}}); err != nil {
			return err
		}
	}
	return nil
}

func (p *peer) postSend(wr qp.SendWR) error {
	for {
		_, err := p.q.PostSend([]qp.SendWR{wr})
		if !errors.Is(err, qp.ErrQueueFull) {
			return err
		}
		runtime.Gosched()
	}
}

// postList posts wrs, all of them, waiting while the send queue is full.
func (p *peer) postList(wrs []qp.SendWR) error {
	for len(wrs) > 0 {
		n, err := p.q.PostSend(wrs)
		wrs = wrs[n:]
		if err != nil && !errors.Is(err, qp.ErrQueueFull) {
			return err
		}
		if len(wrs) > 0 {
			runtime.Gosched()
		}
	}
	return nil
}

func (p *peer) sendSGE() []qp.SGE {
	return []qp.SGE{{Offset: 0, Len: uint32(p.lay.size), Key: p.mr.Key()}}
}

// Result is what a test measured on the client.
type Result struct {
	Lat      []time.Duration // per iteration (latency tests)
	Bytes    int64           // bw tests
	Elapsed  time.Duration
	PeakMiBs float64
}

// runClientTest runs the client's side of the test over a connected peer.
func runClientTest(p *peer, prm Params) (Result, error) {
	var r Result
	total := prm.Iters + warmup
	switch {
	case prm.Handler:
		var err error
		if r.Lat, err = p.handlerLat(true); err != nil {
			return r, err
		}
	case prm.Test == "write_lat" || prm.Test == "send_lat":
		if prm.Test == "send_lat" {
			if err := p.postRecvs(rxDepth); err != nil {
				return r, err
			}
		}
		r.Lat = make([]time.Duration, 0, prm.Iters)
		for i := 0; i < total; i++ {
			v := byte(i%255) + 1
			p.buf[p.lay.size-1] = v
			start := time.Now()
			if prm.Test == "write_lat" {
				wr := qp.SendWR{Op: qp.WRWrite, SGL: p.sendSGE(), RemoteKey: p.rkey, RemoteOffset: uint64(p.lay.recvOff)}
				if err := p.postSend(wr); err != nil {
					return r, err
				}
				if err := p.waitByte(v); err != nil {
					return r, err
				}
			} else {
				if err := p.postSend(qp.SendWR{Op: qp.WRSend, SGL: p.sendSGE()}); err != nil {
					return r, err
				}
				if _, err := p.poll(p.rcq); err != nil {
					return r, err
				}
				if err := p.postRecvs(1); err != nil {
					return r, err
				}
			}
			if i >= warmup {
				r.Lat = append(r.Lat, time.Since(start)/2) // perftest: half the round trip
			}
		}
	case prm.Test == "read_lat" || prm.Test == "atomic_lat":
		r.Lat = make([]time.Duration, 0, prm.Iters)
		wr := qp.SendWR{Op: qp.WRRead, Flags: qp.Signaled, SGL: p.sendSGE(), RemoteKey: p.rkey, RemoteOffset: uint64(p.lay.recvOff)}
		if prm.Test == "atomic_lat" {
			wr.Op, wr.CompareAdd = qp.WRFetchAdd, 1
		}
		for i := 0; i < total; i++ {
			start := time.Now()
			if err := p.postSend(wr); err != nil {
				return r, err
			}
			if _, err := p.poll(p.scq); err != nil {
				return r, err
			}
			if i >= warmup {
				r.Lat = append(r.Lat, time.Since(start))
			}
		}
	case prm.Test == "write_bw" || prm.Test == "send_bw":
		var err error
		if r, err = clientBW(p, prm); err != nil {
			return r, err
		}
	}
	// Tell the server the test is over.
	return r, p.postSend(qp.SendWR{ID: 1 << 40, Op: qp.WRSend, Flags: qp.Inline, Inline: []byte("done")})
}

// clientBW streams iters messages with txDepth in flight, one signaled in
// cqMod, and ends with a zero-length Read: its response proves every
// Write before it reached the server's memory.
func clientBW(p *peer, prm Params) (Result, error) {
	var r Result
	credit := func() uint64 { return loadUint64(&p.buf[p.lay.creditOff]) }
	wr := qp.SendWR{Op: qp.WRWrite, SGL: p.sendSGE(), RemoteKey: p.rkey, RemoteOffset: uint64(p.lay.recvOff)}
	if prm.Test == "send_bw" {
		wr = qp.SendWR{Op: qp.WRSend, SGL: p.sendSGE()}
	}
	// Completion times of every cqMod'th message, for the peak.
	marks := make([]time.Time, 0, prm.Iters/cqMod+2)
	start := time.Now()
	marks = append(marks, start)
	inflight := 0 // requests posted and not known complete, in cqMods
	list := make([]qp.SendWR, max(prm.PostList, 1))
	for i := 0; i < prm.Iters; {
		k := min(len(list), prm.Iters-i)
		for inflight+k > txDepth {
			if _, err := p.poll(p.scq); err != nil {
				return r, err
			}
			inflight -= cqMod
			marks = append(marks, time.Now())
		}
		if prm.Test == "send_bw" {
			// The server reposts receives and reports how many: never
			// send into an empty receive queue (that is fatal).
			last := uint64(i + k - 1)
			if err := p.waitFor(func() bool { return last < credit()+rxDepth }, p.q.Placed); err != nil {
				return r, err
			}
		}
		for j := range list[:k] {
			list[j] = wr
			if (i+j)%cqMod == cqMod-1 {
				list[j].Flags = qp.Signaled
				inflight += cqMod
			}
		}
		if err := p.postList(list[:k]); err != nil {
			return r, err
		}
		i += k
	}
	fence := qp.SendWR{ID: 2, Op: qp.WRRead, Flags: qp.Signaled | qp.Fence, RemoteKey: p.rkey}
	if err := p.postSend(fence); err != nil {
		return r, err
	}
	for {
		wc, err := p.poll(p.scq)
		if err != nil {
			return r, err
		}
		if wc.ID == 2 {
			break
		}
		marks = append(marks, time.Now())
	}
	r.Elapsed = time.Since(start)
	r.Bytes = int64(prm.Iters) * int64(prm.Size)
	// Peak: the best of ten equal stretches of completions.
	per := max(1, (len(marks)-1)/10)
	for i := 0; i+per < len(marks); i += per {
		d := marks[i+per].Sub(marks[i]).Seconds()
		if d > 0 {
			r.PeakMiBs = max(r.PeakMiBs, float64(per*cqMod*prm.Size)/d/(1<<20))
		}
	}
	return r, nil
}

// handlerLat plays write_lat from the queue pair's OnInput handler:
// when the peer's Write with the awaited tag lands, the handler answers
// with the next Write at once, on the engine's goroutine. The client
// starts and times the rounds (half round trips, as perftest reports,
// after the warm-up); the server answers. The application goroutine
// only waits for the end. Run and Serve install the handler
// (installLatHandler) before the queue pair connects.
func (p *peer) handlerLat(client bool) ([]time.Duration, error) {
	h := p.lat
	if client {
		h.mu.Lock()
		h.start = time.Now()
		err := h.post()
		h.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-h.done:
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.lat, err
		case <-tick.C:
			if err := p.q.Err(); err != nil {
				return nil, err
			}
		case <-p.ctx.Done():
			return nil, p.ctx.Err()
		}
	}
}

// latHandler is write_lat's state on the engine's goroutine.
type latHandler struct {
	mu       sync.Mutex // the first post is the application's
	p        *peer
	client   bool
	i        int // rounds done
	total    int
	start    time.Time
	lat      []time.Duration
	finished bool       // done has its value
	done     chan error // the test's end, once
}

// installLatHandler installs a handler for total rounds as p.onInput,
// before the queue pair connects.
func (p *peer) installLatHandler(total int, client bool) {
	h := &latHandler{p: p, client: client, total: total, done: make(chan error, 1)}
	if client {
		h.lat = make([]time.Duration, 0, max(0, total-warmup))
	}
	p.lat = h
	p.onInput = h.onInput
}

// finish ends the test with err, once.
func (h *latHandler) finish(err error) {
	if !h.finished {
		h.finished = true
		h.done <- err
	}
}

func tagOf(i int) byte { return byte(i%255) + 1 }

// post writes round i's message, its last byte the round's tag.
func (h *latHandler) post() error {
	p := h.p
	p.buf[p.lay.size-1] = tagOf(h.i)
	_, err := p.q.PostSend(p.sendWR[:])
	return err
}

func (h *latHandler) onInput() {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.p
	for !h.finished && p.buf[p.lay.recvOff+p.lay.size-1] == tagOf(h.i) {
		if h.client {
			if h.i >= warmup {
				h.lat = append(h.lat, time.Since(h.start)/2) // perftest: half the round trip
			}
			h.i++
			if h.i == h.total {
				h.finish(nil)
				return
			}
			h.start = time.Now()
		}
		if err := h.post(); err != nil {
			h.finish(err)
			return
		}
		if !h.client {
			if h.i++; h.i == h.total {
				h.finish(nil)
			}
		}
	}
}

// serverRecvs is how many receives the server posts before it accepts
// the connection: the client sends as soon as it has the server's reply,
// and a SEND that finds no receive posted ends the connection (DDP's
// untagged "no buffer" error, RFC 5041 section 7.2). One is for the
// client's "done"; the SEND tests post a ring of them.
func serverRecvs(test string) int {
	if test == "send_lat" || test == "send_bw" {
		return rxDepth
	}
	return 1
}

// runServerTest runs the server's side until the client's "done"; Serve
// has posted serverRecvs receives.
func runServerTest(p *peer, prm Params) error {
	total := prm.Iters + warmup
	switch prm.Test {
	case "write_lat":
		if prm.Handler {
			if _, err := p.handlerLat(false); err != nil {
				return err
			}
			break
		}
		for i := 0; i < total; i++ {
			v := byte(i%255) + 1
			if err := p.waitByte(v); err != nil {
				return err
			}
			p.buf[p.lay.size-1] = v
			if err := p.postSend(qp.SendWR{Op: qp.WRWrite, SGL: p.sendSGE(), RemoteKey: p.rkey, RemoteOffset: uint64(p.lay.recvOff)}); err != nil {
				return err
			}
		}
	case "send_lat":
		for i := 0; i < total; i++ {
			if _, err := p.poll(p.rcq); err != nil {
				return err
			}
			if err := p.postRecvs(1); err != nil {
				return err
			}
			if err := p.postSend(qp.SendWR{Op: qp.WRSend, SGL: p.sendSGE()}); err != nil {
				return err
			}
		}
	case "send_bw":
		var reposted uint64
		for i := 0; i < prm.Iters; i++ {
			if _, err := p.poll(p.rcq); err != nil {
				return err
			}
			if err := p.postRecvs(1); err != nil {
				return err
			}
			reposted++
			if reposted%64 == 0 || i == prm.Iters-1 {
				var c [8]byte
				putUint64(c[:], reposted)
				wr := qp.SendWR{Op: qp.WRWrite, Flags: qp.Inline, Inline: c[:], RemoteKey: p.rkey, RemoteOffset: uint64(p.lay.creditOff)}
				if err := p.postSend(wr); err != nil {
					return err
				}
			}
		}
	default:
		// read_lat, atomic_lat, write_bw: the server's memory is the
		// target; it waits.
	}
	// Wait for "done".
	for {
		wc, err := p.poll(p.rcq)
		if err != nil {
			return err
		}
		if wc.Len == 4 {
			return nil
		}
	}
}

// LatRow formats a latency Result as perftest does.
func LatRow(size, iters int, lat []time.Duration) string {
	s := slices.Clone(lat)
	slices.Sort(s)
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	var sum, sq float64
	for _, d := range s {
		sum += us(d)
	}
	avg := sum / float64(len(s))
	for _, d := range s {
		sq += (us(d) - avg) * (us(d) - avg)
	}
	q := func(f float64) float64 { return us(s[min(len(s)-1, int(f*float64(len(s))))]) }
	return fmt.Sprintf(" %-7d %-10d %-7.2f %-7.2f %-10.2f %-10.2f %-10.2f %-16.2f %-16.2f",
		size, iters, us(s[0]), us(s[len(s)-1]), q(0.5), avg, math.Sqrt(sq/float64(len(s))), q(0.99), q(0.999))
}

// LatHeader and BwHeader are perftest's column headers.
const LatHeader = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"
const BwHeader = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"

// BwRow formats a bandwidth result as perftest does (under BwHeader).
func BwRow(size, iters int, r Result) string {
	avg := float64(r.Bytes) / r.Elapsed.Seconds() / (1 << 20)
	return fmt.Sprintf(" %-10d %-10d     %-10.2f          %-10.2f            %.6f",
		size, iters, max(r.PeakMiBs, avg), avg, float64(iters)/r.Elapsed.Seconds()/1e6)
}

// Serve accepts one test connection on l and serves it as the client
// asked; it returns the test's parameters.
func Serve(ctx context.Context, l *qp.Listener) (Params, error) {
	req, err := l.Accept(ctx)
	if err != nil {
		return Params{}, err
	}
	prm, err := parseParams(req.PrivateData())
	if err != nil {
		req.Reject([]byte(err.Error()))
		return prm, err
	}
	p, err := newPeer(ctx, prm.Size)
	if err != nil {
		req.Reject([]byte(err.Error()))
		return prm, err
	}
	defer p.q.Close()
	p.rkey = prm.rkey
	if prm.Handler {
		p.setSendWR()
		p.installLatHandler(prm.Iters+warmup, false)
	}
	if err := p.postRecvs(serverRecvs(prm.Test)); err != nil {
		req.Reject([]byte(err.Error()))
		return prm, err
	}
	if err := req.Accept(p.q, []byte("ustack-perf rkey="+strconv.FormatUint(uint64(p.mr.Key()), 10))); err != nil {
		return prm, err
	}
	if err := runServerTest(p, prm); err != nil {
		return prm, fmt.Errorf("%s: %w", prm.Test, err)
	}
	return prm, nil
}

// Run connects with dial and runs prm as the client.
func Run(ctx context.Context, dial func(context.Context) (net.Conn, error), prm Params) (Result, error) {
	p, err := newPeer(ctx, prm.Size)
	if err != nil {
		return Result{}, err
	}
	defer p.q.Close()
	prm.rkey = p.mr.Key()
	if prm.Handler {
		p.installLatHandler(prm.Iters+warmup, true)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := dial(cctx)
	if err != nil {
		return Result{}, err
	}
	reply, err := p.q.Connect(cctx, c, prm.encode())
	if err != nil {
		return Result{}, err
	}
	k, ok := strings.CutPrefix(string(reply), "ustack-perf rkey=")
	n, perr := strconv.ParseUint(k, 10, 32)
	if !ok || perr != nil {
		return Result{}, fmt.Errorf("server reply %q", reply)
	}
	p.rkey = uint32(n)
	if prm.Handler {
		p.setSendWR()
	}
	r, err := runClientTest(p, prm)
	if err != nil {
		return r, fmt.Errorf("%s: %w", prm.Test, err)
	}
	return r, nil
}
