package stack

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/link"
)

// The owned fast path's differential test: one sequence of segments from
// a scripted peer to an echo handler, played against netstack alone
// (Config.Debug.NetstackFastPath), against the owned fast path, and against the
// owned fast path with the connection handed back to netstack at random
// points (SetOwnedChaos) and promoted again wherever it is quiet, must
// give the same segments from ustack (flags, numbers, window, SACK
// blocks, payload; not the timestamps' values, which are clocks), the
// same bytes to the handler, and the same connection state at the end,
// over holes, duplicates, SACK, window changes, PAWS, urgent data and
// ACKs of data never sent.
//
// As in the fast path's differential (fastrx_diff_test.go), each step's
// segments reach ustack's worker as one RX batch, the next step goes only
// after the worker took them, and delayed ACKs are off; the peer's
// handshake round trip keeps ustack's timers past a run's end, and the
// last step acknowledges everything ustack sent.

// ownedMode is how a differential run carries the connection.
type ownedMode int

const (
	ownedNetstack ownedMode = iota // Config.Debug.NetstackFastPath: netstack alone
	ownedOn                        // the owned fast path
	ownedChaos                     // the owned fast path, demoted at random
)

func (m ownedMode) String() string { return [...]string{"netstack", "owned", "owned+chaos"}[m] }

// ownedSeg is one segment of a step: what the peer sends, its ACK chosen
// when it is sent (from what ustack has sent by then).
type ownedSeg struct {
	seg
	ack int // 0: all ustack sent; 1: the last ACK again; 2: half way
	// quiet, on a step's first segment, is how long the peer stays
	// silent before the step, while ustack's timers run: what it sent
	// meanwhile (a tail loss probe, a retransmission) is compared too.
	quiet time.Duration
}

// decodeOwned turns fuzz input into steps, 3 bytes a segment:
//
//	b0 bits 0-2: sequence: 0-3 and 6-7 the peer's next byte, 4 ahead
//	             of it (a hole), 5 behind it (a duplicate or overlap)
//	b0 bits 3-7: 0-21 ACK (PSH if odd), 22-23 a SACK option, 24 URG,
//	             25 a small window, 26 zero window, 27 an old timestamp,
//	             28 no payload, 29 ACK of unsent data, 30-31 ACK
//	b1:          payload length, modulo 200
//	b2 bits 0-1: the ACK: all of ustack's data, the last again, half way
//	b2 bits 2-4: the hole or overlap, in 8-byte units (1-8)
//	b2 bit 7:    the next segment joins this one's batch
func decodeOwned(in []byte, ts bool) [][]ownedSeg {
	var steps [][]ownedSeg
	var cur []ownedSeg
	next := uint32(1)
	for len(in) >= 3 && len(steps) < 24 {
		b0, b1, b2 := in[0], in[1], in[2]
		in = in[3:]
		n := uint32(b1)%200 + 1
		d := (uint32(b2>>2)&7 + 1) * 8
		seq := next
		switch b0 & 7 {
		case 4:
			seq = next + d
		case 5:
			d = min(d, next-1)
			seq = next - d
		}
		s := ownedSeg{seg: seg{Flags: "A", Seq: seq}, ack: int(b2&3) % 3}
		switch v := b0 >> 3; {
		case v < 22 || v >= 30:
			if v&1 == 1 {
				s.Flags = "PA"
			}
		case v < 24:
			s.SACK = [][2]uint32{{1, 2}}
		case v == 24:
			s.Flags = "UPA"
		case v == 25:
			s.Win = 64
		case v == 26:
			s.Win = zeroWin
		case v == 27:
			if !ts {
				break
			}
			s.TSval = 1 // before TS.Recent
		case v == 28:
			n = 0
		case v == 29:
			s.ack = 3
		}
		if s.SACK != nil && n == 0 {
			n = 1
		}
		s.Payload = diffPayload(seq-1, n)
		if seq == next {
			next += n
		} else if seq+n > next && seq < next {
			next = seq + n
		}
		cur = append(cur, s)
		if b2&0x80 == 0 {
			steps = append(steps, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		steps = append(steps, cur)
	}
	return steps
}

// recHandler echoes what it gets and records it.
type recHandler struct {
	mu  sync.Mutex
	got []byte
	s   *Stream
}

func (h *recHandler) OnOpen(s *Stream) {
	h.mu.Lock()
	h.s = s
	h.mu.Unlock()
}

func (h *recHandler) OnTraffic(s *Stream, b []byte) {
	if b == nil {
		return
	}
	h.mu.Lock()
	h.got = append(h.got, b...)
	h.mu.Unlock()
	s.Write(b)
}

func (h *recHandler) OnClose(*Stream, error) {}

// ownedRun is one run's outcome.
type ownedRun struct {
	sent  []string
	got   []byte
	state tcp.FastState
	fp    OwnedStats
}

// recReader echoes what a worker-read connection (PollOnWorker, as a
// queue pair's engine) gets, from consumed, and records it.
type recReader struct {
	mu        sync.Mutex
	got, pend []byte
}

// pollEcho has the worker read c into r, echoing each read.
func (r *recReader) pollEcho(t *testing.T, c *tcpConn) {
	err := c.PollOnWorker(func(b []byte) {
		r.mu.Lock()
		r.got = append(r.got, b...)
		r.pend = append(r.pend, b...)
		r.mu.Unlock()
	}, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if n, err := c.TryWrite(r.pend); n != len(r.pend) || err != nil {
			t.Errorf("TryWrite: %d of %d, %v", n, len(r.pend), err)
		}
		r.pend = r.pend[:0]
		return false
	}, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
}

// runOwned plays steps against an echo carried as mode says: a handler,
// or with reader a worker-read connection.
func runOwned(t *testing.T, steps [][]ownedSeg, ts bool, mode ownedMode, seed uint64, reader bool) ownedRun {
	t.Helper()
	p := newScriptPeer(t, scriptOptions{Timestamps: ts, HandshakeRTT: 50 * time.Millisecond,
		Config: func(c *Config) { c.DelayedAck = -1; c.Debug.NetstackFastPath = mode == ownedNetstack }})
	p.t = quietTB{p.t}
	if mode == ownedChaos {
		rng := rand.New(rand.NewPCG(seed, 7))
		p.s.ep.SetOwnedChaos(func() bool { return rng.IntN(3) == 0 })
	}
	h := &recHandler{}
	var rd *recReader
	var conn *tcpConn
	if reader {
		conn = p.Connect().(*tcpConn)
		rd = &recReader{}
		rd.pollEcho(t, conn)
	} else {
		connectHandler(t, p, h)
	}
	// The first request goes to an open stream: one that arrives before
	// the worker opened it is queued, and ACKed, by netstack.
	for deadline := time.Now().Add(scriptWait); ; time.Sleep(100 * time.Microsecond) {
		h.mu.Lock()
		open := h.s != nil
		h.mu.Unlock()
		if open || reader {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the handler opened no stream")
		}
	}

	var run ownedRun
	sentEnd, lastAck := uint32(1), uint32(1) // ustack's data, relative to its ISN
	stackAck := uint32(1)                    // the peer's data ustack acknowledged
	// collect records ustack's segments until none came for d, or,
	// with until set, until then.
	collect := func(d time.Duration, until ...time.Time) {
		for {
			if len(until) > 0 {
				if d = time.Until(until[0]); d <= 0 {
					return
				}
			}
			s, ok := p.next(d)
			if !ok {
				return
			}
			if end := s.Seq + uint32(len(s.Payload)); int32(end-sentEnd) > 0 {
				sentEnd = end
			}
			if strings.Contains(s.Flags, "A") && int32(s.Ack-stackAck) > 0 {
				stackAck = s.Ack
			}
			s.TSval, s.TSecr = 0, 0
			run.sent = append(run.sent, s.String())
		}
	}
	send := func(step []ownedSeg) {
		if step[0].quiet > 0 {
			collect(0, time.Now().Add(step[0].quiet))
		}
		batch := make([]seg, len(step))
		for i, s := range step {
			switch s.ack {
			case 0:
				s.Ack = sentEnd
			case 1:
				s.Ack = lastAck
			case 2:
				s.Ack = lastAck + (sentEnd-lastAck)/2
			case 3:
				s.Ack = sentEnd + 100
			}
			if s.ack != 3 {
				lastAck = s.Ack
			}
			batch[i] = s.seg
		}
		p.sendTaken(batch, func() { collect(0) })
		collect(2 * time.Millisecond)
	}
	for _, step := range steps {
		send(step)
	}
	// Acknowledge all ustack sent, so that no timer is left to differ.
	send([]ownedSeg{{seg: seg{Flags: "A", Seq: stackAck}}})
	collect(20 * time.Millisecond)

	run.fp = p.s.Stats().FastPath.Owned
	if reader {
		rd.mu.Lock()
		run.got = append(run.got, rd.got...)
		rd.mu.Unlock()
		conn.ownMu.Lock()
		if conn.own != nil {
			conn.own.Demote(link.DemoteOwner)
		}
		conn.ownMu.Unlock()
		run.state = conn.ep.FastState()
	} else {
		h.mu.Lock()
		s := h.s
		run.got = append(run.got, h.got...)
		h.mu.Unlock()
		if s == nil {
			t.Fatal("the handler opened no stream")
		}
		s.mu.Lock()
		s.disown(link.DemoteOwner)
		s.mu.Unlock()
		run.state = s.ep.FastState()
	}
	run.state.SndUna -= p.irs
	run.state.SndNxt -= p.irs
	// The congestion window is netstack's: the owned fast path does not
	// grow it, so a run that was carried ends with a smaller one.
	run.state.SndCwnd = 0
	return run
}

// checkOwned plays in in the three modes and fails if the owned runs
// differ from netstack's in each of diffTries tries.
func checkOwned(t *testing.T, in []byte, ts bool, seed uint64, reader bool) (owned, chaos OwnedStats) {
	steps := decodeOwned(in, ts)
	if len(steps) == 0 {
		return
	}
	runs := checkOwnedSteps(t, steps, ts, seed, reader, ownedOn, ownedChaos)
	return runs[ownedOn].fp, runs[ownedChaos].fp
}

// checkOwnedSteps plays steps with netstack alone and in each of modes,
// fails where a mode's run differs from netstack's in each of diffTries
// tries, and returns the last runs by mode, netstack's among them.
func checkOwnedSteps(t *testing.T, steps [][]ownedSeg, ts bool, seed uint64, reader bool, modes ...ownedMode) map[ownedMode]ownedRun {
	var steplog strings.Builder
	for i, st := range steps {
		fmt.Fprintf(&steplog, "  step %d:", i)
		for _, s := range st {
			fmt.Fprintf(&steplog, " %v (ack %d);", s.seg, s.ack)
		}
		steplog.WriteString("\n")
	}
	runs := map[ownedMode]ownedRun{}
	for _, mode := range modes {
		var base, run ownedRun
		for try := 1; ; try++ {
			base, run = runOwned(t, steps, ts, ownedNetstack, seed, reader), runOwned(t, steps, ts, mode, seed, reader)
			if ownedSame(base, run) || try == diffTries {
				break
			}
			t.Logf("%v try %d: the runs differ; playing the sequence again\nnetstack:\n  %s\n%v:\n  %s\nstate %+v\n vs %+v", mode, try,
				strings.Join(base.sent, "\n  "), mode, strings.Join(run.sent, "\n  "), base.state, run.state)
		}
		if a, b := strings.Join(base.sent, "\n  "), strings.Join(run.sent, "\n  "); a != b {
			t.Errorf("ustack's segments differ\nnetstack:\n  %s\n%v:\n  %s\nsteps:\n%s", a, mode, b, steplog.String())
		}
		if !bytes.Equal(base.got, run.got) {
			t.Errorf("the handler got %q with netstack, %q %v\nsteps:\n%s", base.got, run.got, mode, steplog.String())
		}
		if base.state != run.state {
			t.Errorf("connection state differs\nnetstack: %+v\n%v: %+v\nsteps:\n%s", base.state, mode, run.state, steplog.String())
		}
		if base.fp.Promotions != 0 {
			t.Errorf("netstack run counted promotions: %+v", base.fp)
		}
		if run.fp.TakeBackFailed != 0 {
			t.Errorf("%v: netstack refused %d take-backs", mode, run.fp.TakeBackFailed)
		}
		runs[ownedNetstack], runs[mode] = base, run
	}
	return runs
}

func ownedSame(a, b ownedRun) bool {
	return strings.Join(a.sent, "\n") == strings.Join(b.sent, "\n") && bytes.Equal(a.got, b.got) && a.state == b.state
}

// ownedSeeds reach the fast path's receive verdicts and the hand-over's
// cases.
var ownedSeeds = [][]byte{
	{0, 10, 0, 8, 20, 0, 0, 30, 0, 0, 5, 0},        // requests in order
	{8, 10, 1, 8, 10, 2, 8, 10, 0, 0, 10, 0},       // ACK none new, half, all
	{0, 10, 0, 4, 10, 0, 0, 8, 0, 0, 50, 0},        // a hole, filled
	{0, 10, 0, 5, 10, 4, 0, 10, 0},                 // a duplicate
	{0, 10, 0x80, 0, 10, 0x80, 0, 10, 0, 0, 5, 0},  // three in one batch
	{0, 10, 0, 192, 10, 0, 0, 10, 0},               // URG
	{0, 10, 0, 176, 10, 0, 0, 10, 0},               // SACK option
	{0, 10, 0, 200, 10, 0, 0, 150, 0, 0, 10, 0},    // a small window, then open
	{0, 10, 0, 208, 10, 0, 0, 10, 0},               // zero window
	{0, 10, 0, 216, 10, 0, 0, 10, 0},               // old timestamp
	{0, 10, 0, 224, 0, 0, 0, 10, 0},                // pure ACK
	{0, 10, 0, 232, 10, 0, 0, 10, 0},               // ACK of unsent data
	{0, 199, 0, 0, 199, 0, 0, 199, 0, 0, 199, 0},   // larger requests
	{0, 10, 1, 0, 10, 1, 0, 10, 1, 0, 10, 0},       // replies pile up in flight
	{4, 30, 0x84, 0, 10, 0x80, 0, 10, 0, 0, 40, 0}, // holes in one batch
}

// TestOwnedDifferential plays the seeds and random inputs, with and
// without timestamps, to an echo handler and to an echo reading on the
// worker (PollOnWorker), and checks the owned runs were carried (the
// comparison is empty otherwise).
func TestOwnedDifferential(t *testing.T) {
	inputs := append([][]byte(nil), ownedSeeds...)
	rng := rand.New(rand.NewPCG(42, 42))
	random := 10
	if testing.Short() || raceEnabled {
		// The race detector slows each run tenfold: the seeds and a
		// few.
		random = 2
	}
	for range random {
		in := make([]byte, 3*(4+rng.IntN(10)))
		for i := range in {
			in[i] = byte(rng.Uint32())
		}
		for i := 0; i < len(in); i += 3 {
			if rng.IntN(3) > 0 {
				in[i] &^= 0xf7 // mostly in order
			}
		}
		inputs = append(inputs, in)
	}
	for _, reader := range []bool{false, true} {
		var owned, chaos OwnedStats
		for i, in := range inputs {
			for _, ts := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%d/ts=%v", map[bool]string{false: "handler", true: "reader"}[reader], i, ts), func(t *testing.T) {
					o, c := checkOwned(t, in, ts, uint64(i), reader)
					owned.Promotions += o.Promotions
					owned.SegmentsIn += o.SegmentsIn
					owned.Demotions += o.Demotions
					chaos.Promotions += c.Promotions
					chaos.Demotions += c.Demotions
				})
			}
		}
		t.Logf("reader %v: owned runs: %d promotions, %d segments, %d demotions; chaos runs: %d promotions, %d demotions",
			reader, owned.Promotions, owned.SegmentsIn, owned.Demotions, chaos.Promotions, chaos.Demotions)
		if owned.Promotions == 0 || owned.SegmentsIn == 0 || owned.Demotions == 0 || chaos.Demotions <= owned.Demotions {
			t.Errorf("reader %v: the runs did not exercise the owned fast path and its hand-over", reader)
		}
	}
}

// TestOwnedDifferentialLoss: replies the peer does not acknowledge, so
// that ustack's timers send a tail loss probe, then a retransmission
// after the retransmission timeout, played as in TestOwnedDifferential.
// On the owned fast path the probe deadline hands the connection back to
// netstack (DemoteTimeout), whose timers, armed from the fast path's
// probe deadline, must send what netstack alone sends when. The peer's
// handshake round trip (50 ms) sets the deadlines: with one segment in
// flight the probe about 300 ms after the send (twice SRTT and the
// peer's delayed ACK), with more about 100 ms; the retransmission 200 ms
// after the probe. The silences sit well between them.
func TestOwnedDifferentialLoss(t *testing.T) {
	// req is a request of n bytes (lossSteps numbers it) with ack as
	// ownedSeg's; quiet a pure ACK of all after a silence of d.
	req := func(n, ack int) []ownedSeg {
		return []ownedSeg{{seg: seg{Flags: "PA", Payload: make([]byte, n)}, ack: ack}}
	}
	quiet := func(d time.Duration) []ownedSeg { return []ownedSeg{{seg: seg{Flags: "A"}, quiet: d}} }
	steps := [][][]ownedSeg{
		// The second echo unacknowledged for 400 ms: a probe.
		{req(10, 0), req(10, 0), quiet(400 * time.Millisecond)},
		// The first for 600 ms: the probe, then a retransmission (the
		// next comes 200 ms after it).
		{req(10, 0), quiet(600 * time.Millisecond)},
		// Three echoes in flight, the first two acknowledged late, the
		// last not for 150 ms: probes from the ACKs.
		{req(10, 0), req(20, 1), req(30, 1), quiet(150 * time.Millisecond)},
	}
	if testing.Short() {
		steps = steps[:1]
	}
	var timeouts uint64
	for i := range steps {
		for _, ts := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/ts=%v", i, ts), func(t *testing.T) {
				runs := checkOwnedSteps(t, lossSteps(steps[i]), ts, 0, false, ownedOn)
				base, owned := runs[ownedNetstack], runs[ownedOn]
				retrans, seen := 0, map[string]bool{}
				for _, s := range base.sent {
					if strings.Contains(s, " len ") && seen[s] {
						retrans++
					}
					seen[s] = true
				}
				if retrans == 0 {
					t.Errorf("netstack sent nothing twice: no loss was repaired\n  %s", strings.Join(base.sent, "\n  "))
				}
				timeouts += owned.fp.DemotionsBy["timeout"]
			})
		}
	}
	if timeouts == 0 {
		t.Errorf("no owned run was handed back at its retransmission deadline")
	}
}

// lossSteps numbers steps' segments in order from the first byte and
// fills in their payloads, keeping their lengths.
func lossSteps(steps [][]ownedSeg) [][]ownedSeg {
	next := uint32(1)
	out := make([][]ownedSeg, len(steps))
	for i, st := range steps {
		out[i] = append([]ownedSeg(nil), st...)
		for j := range out[i] {
			n := uint32(len(out[i][j].Payload))
			out[i][j].Seq = next
			out[i][j].Payload = diffPayload(next-1, n)
			next += n
		}
	}
	return out
}

// FuzzOwnedDifferential: go test ./stack -run XXX -fuzz FuzzOwnedDifferential
func FuzzOwnedDifferential(f *testing.F) {
	// A few seeds: TestOwnedDifferential plays them all in every run.
	for _, s := range ownedSeeds[:3] {
		f.Add(s, false, false)
		f.Add(s, true, true)
	}
	f.Fuzz(func(t *testing.T, in []byte, ts, reader bool) { checkOwned(t, in, ts, 1, reader) })
}
