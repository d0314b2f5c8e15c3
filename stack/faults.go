package stack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/xsk"
)

// Faults configures seeded fault injection in ustack's link layer, for
// testing applications (and ustack) against a bad network: each frame
// crossing the wire in a direction is, independently, dropped,
// corrupted, duplicated, reordered or delayed with the probabilities
// given. The same Seed, configuration and traffic give the same
// decisions. Faults sit between netstack and the AF_XDP socket (or the
// memory wire), under a packet capture if one is configured: a capture
// shows frames as sent before TX faults and as received after RX faults.
type Faults struct {
	// Seed seeds the decisions (each queue and direction draws from its
	// own generator derived from it).
	Seed uint64
	// RX applies to frames received from the wire, TX to frames sent.
	RX, TX FaultRates
}

// FaultRates are the probabilities, each in [0, 1], that a frame is
// subjected to each fault. At most one fault applies to a frame; the
// draws are made in the order of the fields.
type FaultRates struct {
	// Drop discards the frame.
	Drop float64
	// Corrupt flips one bit of an IPv4 or IPv6 frame's network-layer
	// bytes (the Ethernet header is left alone: on a real link the frame
	// check sequence catches damage there). The IPv4 header, TCP, UDP and
	// ICMP checksums must catch it; the frame is still delivered.
	Corrupt float64
	// Duplicate delivers the frame twice, back to back.
	Duplicate float64
	// Reorder holds the frame back until the next frame has gone ahead
	// of it (or ReorderTimeout passes).
	Reorder float64
	// Delay holds the frame back for DelayTime.
	Delay float64
	// DelayTime is how long a delayed frame is held (default 1ms).
	DelayTime time.Duration
}

func (r *FaultRates) setDefaults() {
	if r.DelayTime == 0 {
		r.DelayTime = time.Millisecond
	}
}

func (r FaultRates) active() bool {
	return r.Drop > 0 || r.Corrupt > 0 || r.Duplicate > 0 || r.Reorder > 0 || r.Delay > 0
}

func (r FaultRates) validate(dir string) error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Drop", r.Drop}, {"Corrupt", r.Corrupt}, {"Duplicate", r.Duplicate}, {"Reorder", r.Reorder}, {"Delay", r.Delay}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("%w: faults: %s.%s %v outside [0, 1]", ErrConfig, dir, p.name, p.v)
		}
	}
	if r.Drop+r.Corrupt+r.Duplicate+r.Reorder+r.Delay > 1 {
		return fmt.Errorf("%w: faults: %s rates add up to more than 1", ErrConfig, dir)
	}
	if r.DelayTime < 0 || r.DelayTime > time.Second {
		return fmt.Errorf("%w: faults: %s.DelayTime %v outside [0, 1s]", ErrConfig, dir, r.DelayTime)
	}
	return nil
}

// ReorderTimeout is the longest a reordered frame waits for a frame to
// overtake it.
const ReorderTimeout = 2 * time.Millisecond

// FaultStats count the faults applied in one direction.
type FaultStats struct {
	Dropped, Corrupted, Duplicated, Reordered, Delayed uint64
	// Skipped counts faults drawn but not applied for want of a spare
	// frame (a duplicate, or a held RX frame's copy).
	Skipped uint64
}

type fault uint8

const (
	faultNone fault = iota
	faultDrop
	faultCorrupt
	faultDuplicate
	faultReorder
	faultDelay
)

// faultDir is one direction's generator and counters.
type faultDir struct {
	rates atomic.Pointer[FaultRates] // replaced whole by Stack.SetFaults
	rng   *rand.Rand

	dropped, corrupted, duplicated, reordered, delayed, skipped atomic.Uint64
}

func newFaultDir(r FaultRates, seed uint64, stream uint64) *faultDir {
	r.setDefaults()
	d := &faultDir{rng: rand.New(rand.NewPCG(seed, stream))}
	d.rates.Store(&r)
	return d
}

func (d *faultDir) draw() fault {
	r := d.rates.Load()
	if !r.active() {
		return faultNone
	}
	x := d.rng.Float64()
	for _, f := range []struct {
		p float64
		f fault
	}{{r.Drop, faultDrop}, {r.Corrupt, faultCorrupt}, {r.Duplicate, faultDuplicate}, {r.Reorder, faultReorder}, {r.Delay, faultDelay}} {
		if x < f.p {
			return f.f
		}
		x -= f.p
	}
	return faultNone
}

// corrupt flips one bit past the Ethernet header of an IP frame; it
// reports whether it did.
func (d *faultDir) corrupt(frame []byte) bool {
	if len(frame) <= ethHeaderLen {
		return false
	}
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case 0x0800, 0x86dd:
	default:
		return false
	}
	i := ethHeaderLen + d.rng.IntN(len(frame)-ethHeaderLen)
	frame[i] ^= 1 << d.rng.IntN(8)
	return true
}

func (d *faultDir) stats() FaultStats {
	return FaultStats{
		Dropped: d.dropped.Load(), Corrupted: d.corrupted.Load(), Duplicated: d.duplicated.Load(),
		Reordered: d.reordered.Load(), Delayed: d.delayed.Load(), Skipped: d.skipped.Load(),
	}
}

// held is a frame a fault holds back: released at due, or, for a
// reordered frame, as soon as a later frame has gone ahead of it.
type held struct {
	desc   xsk.Desc
	due    time.Time
	passed bool // a later frame has gone ahead
}

// ownBit marks the addresses of faultIO's own RX frames (copies it made
// for duplicates and held frames), which its Data and Recycle resolve.
const ownBit = uint64(1) << 63

// ownFrames is how many frames faultIO keeps for RX copies.
const ownFrames = 128

// ownFrameSize is the size of faultIO's own frames: at least any UMEM
// frame's.
const ownFrameSize = 4096

// faultIO is frame I/O that injects faults into another: a middleware in
// the manner of gVisor's link/qdisc, composed over a queue's frameIO when
// Config.Faults is set.
//
// RX: drops are recycled to the inner I/O at once; duplicates, reordered
// and delayed frames are copies in faultIO's own frames (the inner frame
// goes back at once), which Recycle returns to faultIO. TX: drops are
// freed to the inner I/O; duplicates take a second inner frame; reordered
// and delayed frames stay held in their own frames until released
// (by Enqueue, Complete or a Kick that gets the TX lock), and go back to
// the inner I/O's pool when the stack closes (drain) if still held. No
// frame is ever lost.
type faultIO struct {
	frameIO
	rx, tx *faultDir

	// RX side: the worker only.
	rxHeld    []held
	rxScratch [batchSize]xsk.Desc
	rxRecycle [batchSize]xsk.Desc
	own       []byte
	ownFree   []uint64

	// TX side: under txMu (the queue's TX lock, which Kick takes with
	// TryLock to release due frames when no writer comes).
	txMu    *sync.Mutex
	txHeld  []held
	txHeldN atomic.Int32 // len(txHeld), for TxQueued and Wait
	nextDue atomic.Int64 // earliest due time of a held TX frame (unix ns; 0: none)
	txOne   [1]xsk.Desc
}

var _ frameIO = (*faultIO)(nil)

func newFaultIO(inner frameIO, f *Faults, queue int, txMu *sync.Mutex) *faultIO {
	io := &faultIO{
		frameIO: inner,
		rx:      newFaultDir(f.RX, f.Seed, uint64(queue)*2),
		tx:      newFaultDir(f.TX, f.Seed, uint64(queue)*2+1),
		txMu:    txMu,
	}
	// Own frames even if RX has no faults yet: SetFaults may add some.
	{
		io.own = make([]byte, ownFrames*ownFrameSize)
		for i := ownFrames - 1; i >= 0; i-- {
			io.ownFree = append(io.ownFree, ownBit|uint64(i)*ownFrameSize)
		}
		io.rxHeld = make([]held, 0, ownFrames)
	}
	io.txHeld = make([]held, 0, 64)
	return io
}

func (f *faultIO) faultStats() (rx, tx FaultStats) { return f.rx.stats(), f.tx.stats() }

// ErrNoFaults is returned by SetFaults on a stack configured without
// Config.Faults.
var ErrNoFaults = errors.New("stack has no fault injector (Config.Faults is nil)")

// SetFaults replaces the fault rates of every queue, for example to cut
// the link (Drop: 1) for a while and then restore it. The seeded
// generators carry on. The stack must have been configured with
// Config.Faults (its injectors are only in the data path then).
func (s *Stack) SetFaults(rx, tx FaultRates) error {
	if err := rx.validate("RX"); err != nil {
		return err
	}
	if err := tx.validate("TX"); err != nil {
		return err
	}
	rx.setDefaults()
	tx.setDefaults()
	for _, q := range s.ep.queues {
		if q.faults == nil {
			return ErrNoFaults
		}
		q.faults.rx.rates.Store(&rx)
		q.faults.tx.rates.Store(&tx)
	}
	return nil
}

// ownCopy copies frame into one of faultIO's own frames.
func (f *faultIO) ownCopy(frame []byte) (xsk.Desc, bool) {
	if len(f.ownFree) == 0 || len(frame) > ownFrameSize {
		return xsk.Desc{}, false
	}
	a := f.ownFree[len(f.ownFree)-1]
	f.ownFree = f.ownFree[:len(f.ownFree)-1]
	off := a &^ ownBit
	copy(f.own[off:off+ownFrameSize], frame)
	return xsk.Desc{Addr: a, Len: uint32(len(frame))}, true
}

// Data implements frameIO, resolving faultIO's own frames.
func (f *faultIO) Data(d xsk.Desc) []byte {
	if d.Addr&ownBit != 0 {
		off := d.Addr &^ ownBit
		return f.own[off : off+uint64(d.Len) : off+uint64(d.Len)]
	}
	return f.frameIO.Data(d)
}

// Receive implements frameIO: due held frames first, then the inner
// I/O's frames with faults applied.
func (f *faultIO) Receive(descs []xsk.Desc) int {
	w := 0
	if len(f.rxHeld) > 0 {
		now := time.Now()
		k := 0
		for _, h := range f.rxHeld {
			if w < len(descs) && (h.passed || !now.Before(h.due)) {
				descs[w] = h.desc
				w++
				continue
			}
			f.rxHeld[k] = h
			k++
		}
		f.rxHeld = f.rxHeld[:k]
	}
	// Half the room: each frame received may come out twice.
	room := min((len(descs)-w)/2, len(f.rxScratch))
	if room == 0 {
		return w
	}
	n := f.frameIO.Receive(f.rxScratch[:room])
	if n == 0 {
		return w
	}
	for i := range f.rxHeld {
		f.rxHeld[i].passed = true
	}
	heldFrom := len(f.rxHeld)
	deliver := func(d xsk.Desc) {
		descs[w] = d
		w++
		// Frames held from this batch have now been overtaken.
		for i := heldFrom; i < len(f.rxHeld); i++ {
			f.rxHeld[i].passed = true
		}
		heldFrom = len(f.rxHeld)
	}
	drop := f.rxRecycle[:0]
	for _, d := range f.rxScratch[:n] {
		switch k := f.rx.draw(); k {
		case faultDrop:
			f.rx.dropped.Add(1)
			drop = append(drop, d)
			continue
		case faultCorrupt:
			if f.rx.corrupt(f.frameIO.Data(d)) {
				f.rx.corrupted.Add(1)
			}
		case faultDuplicate:
			c, ok := f.ownCopy(f.frameIO.Data(d))
			if !ok {
				f.rx.skipped.Add(1)
				break
			}
			f.rx.duplicated.Add(1)
			deliver(d)
			if w < len(descs) {
				deliver(c)
			} else {
				f.rxHeld = append(f.rxHeld, held{desc: c, passed: true})
			}
			continue
		case faultReorder, faultDelay:
			c, ok := f.ownCopy(f.frameIO.Data(d))
			if !ok {
				f.rx.skipped.Add(1)
				break
			}
			f.rxHeld = append(f.rxHeld, f.rx.hold(c, k))
			drop = append(drop, d)
			continue
		}
		deliver(d)
	}
	if len(drop) > 0 {
		f.frameIO.Recycle(drop)
	}
	return w
}

// hold returns the held entry of a frame reordered or delayed, and counts
// it.
func (d *faultDir) hold(desc xsk.Desc, k fault) held {
	if k == faultReorder {
		d.reordered.Add(1)
		return held{desc: desc, due: time.Now().Add(ReorderTimeout)}
	}
	d.delayed.Add(1)
	return held{desc: desc, due: time.Now().Add(d.rates.Load().DelayTime)}
}

// Recycle implements frameIO: faultIO's own frames return to it, the
// rest to the inner I/O.
func (f *faultIO) Recycle(descs []xsk.Desc) {
	inner := f.rxRecycle[:0]
	for _, d := range descs {
		if d.Addr&ownBit != 0 {
			f.ownFree = append(f.ownFree, d.Addr)
			continue
		}
		inner = append(inner, d)
		if len(inner) == len(f.rxRecycle) {
			f.frameIO.Recycle(inner)
			inner = inner[:0]
		}
	}
	if len(inner) > 0 {
		f.frameIO.Recycle(inner)
	}
}

// Wait implements frameIO, waking in time for held frames.
func (f *faultIO) Wait(timeout time.Duration) error {
	now := time.Now()
	for _, h := range f.rxHeld {
		if h.passed {
			return nil
		}
		timeout = min(timeout, max(h.due.Sub(now), 0))
	}
	if due := f.nextDue.Load(); due != 0 {
		timeout = min(timeout, max(time.Duration(due-now.UnixNano()), 0))
	}
	if timeout == 0 {
		return nil
	}
	return f.frameIO.Wait(timeout)
}

// Enqueue implements frameIO (under the TX lock): faults are applied
// frame by frame, and held frames that are due go first.
func (f *faultIO) Enqueue(descs []xsk.Desc) int {
	f.releaseTx()
	for i := range descs {
		d := descs[i]
		switch k := f.tx.draw(); k {
		case faultDrop:
			f.tx.dropped.Add(1)
			f.frameIO.Free(d.Addr)
			continue
		case faultCorrupt:
			if f.tx.corrupt(f.frameIO.Frame(d.Addr)[:d.Len]) {
				f.tx.corrupted.Add(1)
			}
		case faultDuplicate:
			addr, ok := f.frameIO.Alloc()
			if !ok {
				f.tx.skipped.Add(1)
				break
			}
			copy(f.frameIO.Frame(addr), f.frameIO.Frame(d.Addr)[:d.Len])
			pair := [2]xsk.Desc{d, {Addr: addr, Len: d.Len}}
			n := f.frameIO.Enqueue(pair[:])
			if n < 2 {
				f.frameIO.Free(addr)
			}
			if n == 0 {
				f.releaseTx()
				return i
			}
			f.tx.duplicated.Add(1)
			f.passTx()
			continue
		case faultReorder, faultDelay:
			f.txHeld = append(f.txHeld, f.tx.hold(d, k))
			f.noteHeld()
			continue
		}
		if f.frameIO.Enqueue(descs[i:i+1]) == 0 {
			f.releaseTx()
			return i
		}
		f.passTx()
	}
	// A reordered frame goes right after the frame that overtook it.
	f.releaseTx()
	return len(descs)
}

// passTx notes that a frame went ahead of the held ones.
func (f *faultIO) passTx() {
	for i := range f.txHeld {
		f.txHeld[i].passed = true
	}
}

// noteHeld publishes the held TX frames' count and earliest due time.
func (f *faultIO) noteHeld() {
	f.txHeldN.Store(int32(len(f.txHeld)))
	var due int64
	for _, h := range f.txHeld {
		t := h.due.UnixNano()
		if h.passed {
			t = 1
		}
		if due == 0 || t < due {
			due = t
		}
	}
	f.nextDue.Store(due)
}

// releaseTx enqueues the held TX frames that are due, under the TX
// lock. What the ring has no room for stays
// held.
func (f *faultIO) releaseTx() {
	if len(f.txHeld) == 0 {
		return
	}
	now := time.Now()
	k := 0
	for _, h := range f.txHeld {
		if h.passed || !now.Before(h.due) {
			f.txOne[0] = h.desc
			if f.frameIO.Enqueue(f.txOne[:]) == 1 {
				continue
			}
		}
		f.txHeld[k] = h
		k++
	}
	f.txHeld = f.txHeld[:k]
	f.noteHeld()
}

// Complete implements frameIO (under the TX lock), releasing due frames.
func (f *faultIO) Complete() int {
	n := f.frameIO.Complete()
	if f.txHeldN.Load() > 0 {
		f.releaseTx()
	}
	return n
}

// Kick implements frameIO. Held frames that are due are released first
// when the TX lock is free (a writer holding it releases them itself).
func (f *faultIO) Kick() error {
	if f.txHeldN.Load() > 0 {
		if due := f.nextDue.Load(); due != 0 && due <= time.Now().UnixNano() && f.txMu.TryLock() {
			f.releaseTx()
			f.txMu.Unlock()
		}
	}
	return f.frameIO.Kick()
}

// TxQueued implements frameIO: held frames count as queued, so the
// worker keeps kicking until they are released.
func (f *faultIO) TxQueued() int {
	return f.frameIO.TxQueued() + int(f.txHeldN.Load())
}

// drain frees the held TX frames to the inner I/O's pool; held RX
// copies are faultIO's own. Called when the workers have stopped.
func (f *faultIO) drain() {
	f.txMu.Lock()
	defer f.txMu.Unlock()
	for _, h := range f.txHeld {
		f.frameIO.Free(h.desc.Addr)
	}
	f.txHeld = f.txHeld[:0]
	f.noteHeld()
	for _, h := range f.rxHeld {
		f.ownFree = append(f.ownFree, h.desc.Addr)
	}
	f.rxHeld = f.rxHeld[:0]
}
