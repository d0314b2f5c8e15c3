package faultio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/xsk"
)

// Config seeds the generators and sets each direction's rates (package
// stack's Faults, which documents the fields).
type Config struct {
	Seed   uint64
	RX, TX Rates
}

// Rates are the probabilities, each in [0, 1], that a frame is subjected
// to each fault (package stack's FaultRates, which documents them).
type Rates struct {
	Drop, Corrupt, Duplicate, Reorder, Delay float64
	DelayTime                                time.Duration
}

// ReorderTimeout is the longest a reordered frame waits for a frame to
// overtake it.
const ReorderTimeout = 2 * time.Millisecond

// defaultDelay is Rates.DelayTime's default.
const defaultDelay = time.Millisecond

func (r *Rates) setDefaults() {
	if r.DelayTime == 0 {
		r.DelayTime = defaultDelay
	}
}

func (r *Rates) active() bool {
	return r.Drop > 0 || r.Corrupt > 0 || r.Duplicate > 0 || r.Reorder > 0 || r.Delay > 0
}

// Validate reports rates that are not probabilities, or a delay out of
// range; dir names the direction in the error.
func (r Rates) Validate(dir string) error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Drop", r.Drop}, {"Corrupt", r.Corrupt}, {"Duplicate", r.Duplicate}, {"Reorder", r.Reorder}, {"Delay", r.Delay}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("faults: %s.%s %v outside [0, 1]", dir, p.name, p.v)
		}
	}
	if r.Drop+r.Corrupt+r.Duplicate+r.Reorder+r.Delay > 1 {
		return fmt.Errorf("faults: %s rates add up to more than 1", dir)
	}
	if r.DelayTime < 0 || r.DelayTime > time.Second {
		return fmt.Errorf("faults: %s.DelayTime %v outside [0, 1s]", dir, r.DelayTime)
	}
	return nil
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	return errors.Join(c.RX.Validate("RX"), c.TX.Validate("TX"))
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

// dir is one direction's generator and counters.
type dir struct {
	rates atomic.Pointer[Rates] // replaced whole by SetRates
	rng   *rand.Rand            // the RX side's by the worker, the TX side's under the layer's mu

	dropped, corrupted, duplicated, reordered, delayed, skipped atomic.Uint64
}

func newDir(r Rates, seed uint64, stream uint64) *dir {
	r.setDefaults()
	d := &dir{rng: rand.New(rand.NewPCG(seed, stream))}
	d.rates.Store(&r)
	return d
}

func (d *dir) draw() fault {
	r := d.rates.Load()
	if !r.active() {
		return faultNone
	}
	x := d.rng.Float64()
	for _, f := range [...]struct {
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

const ethHeaderLen = 14

// corrupt flips one bit past the Ethernet header of an IP frame (on a
// real link the frame check sequence catches damage to the header); it
// reports whether it did.
func (d *dir) corrupt(frame []byte) bool {
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

func (d *dir) stats() frameio.FaultStats {
	return frameio.FaultStats{
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

// hold returns the held entry of a frame reordered or delayed, and counts
// it.
func (d *dir) hold(desc xsk.Desc, k fault, now time.Time) held {
	if k == faultReorder {
		d.reordered.Add(1)
		return held{desc: desc, due: now.Add(ReorderTimeout)}
	}
	d.delayed.Add(1)
	return held{desc: desc, due: now.Add(d.rates.Load().DelayTime)}
}

// ownBit marks the addresses of the layer's own RX frames (copies it
// made for duplicates and held frames), which its Data and Recycle
// resolve.
const ownBit = uint64(1) << 63

// OwnFrames is how many frames a layer keeps for RX copies.
const OwnFrames = 128

// ownFrameSize is the size of the layer's own frames: at least any UMEM
// frame's.
const ownFrameSize = 4096

// IO is the fault-injecting layer over one queue's frame I/O.
type IO struct {
	frameio.IO
	rx, tx *dir

	// RX side: the worker only.
	rxHeld    []held
	rxScratch [64]xsk.Desc
	rxRecycle [64]xsk.Desc
	own       []byte
	ownFree   []uint64

	// TX side. mu serialises the TX methods below with the timer that
	// releases held frames: the layer keeps its own lock rather than
	// borrowing the stack's TX lock. While nothing is held (heldN 0) the
	// timer makes no call below, and the TX methods, serialised by their
	// caller, skip the lock: heldN turns nonzero only in Enqueue, and the
	// timer's calls below happen before it stores 0.
	mu     sync.Mutex
	heldN  atomic.Int32 // len(txHeld), stored under mu
	txHeld []held       // under mu
	timer  *time.Timer  // releases held TX frames when due; armed under mu
	armed  time.Time    // when timer fires (zero: stopped), under mu
	closed bool         // under mu
	txOne  [1]xsk.Desc  // under mu
	txHook atomic.Pointer[func(frame []byte) bool]
}

var _ frameio.IO = (*IO)(nil)

// New returns a layer over inner injecting c's faults; queue selects the
// generators' streams, so every queue of a stack draws its own.
func New(inner frameio.IO, c Config, queue int) *IO {
	f := &IO{
		IO: inner,
		rx: newDir(c.RX, c.Seed, uint64(queue)*2),
		tx: newDir(c.TX, c.Seed, uint64(queue)*2+1),
	}
	// Own frames even if RX has no faults yet: SetRates may add some.
	f.own = make([]byte, OwnFrames*ownFrameSize)
	for i := OwnFrames - 1; i >= 0; i-- {
		f.ownFree = append(f.ownFree, ownBit|uint64(i)*ownFrameSize)
	}
	f.rxHeld = make([]held, 0, OwnFrames)
	f.txHeld = make([]held, 0, 64)
	f.timer = time.AfterFunc(time.Hour, f.fire)
	f.timer.Stop()
	return f
}

// SetRates replaces both directions' rates (validate them first); the
// seeded generators carry on.
func (f *IO) SetRates(rx, tx Rates) {
	rx.setDefaults()
	tx.setDefaults()
	f.rx.rates.Store(&rx)
	f.tx.rates.Store(&tx)
}

// SetTxHook sets a function that sees every frame Enqueue takes, before
// the faults are drawn: it may change the frame, and returns false to
// drop it. It must not keep the frame. nil removes it.
func (f *IO) SetTxHook(hook func(frame []byte) bool) {
	if hook == nil {
		f.txHook.Store(nil)
		return
	}
	f.txHook.Store(&hook)
}

// OwnFramesOut reports how many of the layer's own RX frames are out
// (held, or received and not yet recycled). Worker only, or after Close.
func (f *IO) OwnFramesOut() int { return OwnFrames - len(f.ownFree) }

// ReadStats implements frameio.IO.
func (f *IO) ReadStats(st *frameio.Stats) {
	f.IO.ReadStats(st)
	st.FaultsRX, st.FaultsTX = f.rx.stats(), f.tx.stats()
}

// ownCopy copies frame into one of the layer's own frames.
func (f *IO) ownCopy(frame []byte) (xsk.Desc, bool) {
	if len(f.ownFree) == 0 || len(frame) > ownFrameSize {
		return xsk.Desc{}, false
	}
	a := f.ownFree[len(f.ownFree)-1]
	f.ownFree = f.ownFree[:len(f.ownFree)-1]
	off := a &^ ownBit
	copy(f.own[off:off+ownFrameSize], frame)
	return xsk.Desc{Addr: a, Len: uint32(len(frame))}, true
}

// Data implements frameio.IO, resolving the layer's own frames.
func (f *IO) Data(d xsk.Desc) []byte {
	if d.Addr&ownBit != 0 {
		off := d.Addr &^ ownBit
		return f.own[off : off+uint64(d.Len) : off+uint64(d.Len)]
	}
	return f.IO.Data(d)
}

// Receive implements frameio.IO: due held frames first, then the frames
// below with faults applied.
func (f *IO) Receive(descs []xsk.Desc) int {
	if len(f.rxHeld) == 0 && !f.rx.rates.Load().active() {
		return f.IO.Receive(descs)
	}
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
	n := f.IO.Receive(f.rxScratch[:room])
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
			if f.rx.corrupt(f.IO.Data(d)) {
				f.rx.corrupted.Add(1)
			}
		case faultDuplicate:
			c, ok := f.ownCopy(f.IO.Data(d))
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
			c, ok := f.ownCopy(f.IO.Data(d))
			if !ok {
				f.rx.skipped.Add(1)
				break
			}
			f.rxHeld = append(f.rxHeld, f.rx.hold(c, k, time.Now()))
			drop = append(drop, d)
			continue
		}
		deliver(d)
	}
	if len(drop) > 0 {
		f.IO.Recycle(drop)
	}
	return w
}

// Recycle implements frameio.IO: the layer's own frames return to it,
// the rest go below.
func (f *IO) Recycle(descs []xsk.Desc) {
	inner := f.rxRecycle[:0]
	for _, d := range descs {
		if d.Addr&ownBit != 0 {
			f.ownFree = append(f.ownFree, d.Addr)
			continue
		}
		inner = append(inner, d)
		if len(inner) == len(f.rxRecycle) {
			f.IO.Recycle(inner)
			inner = inner[:0]
		}
	}
	if len(inner) > 0 {
		f.IO.Recycle(inner)
	}
}

// Wait implements frameio.IO, waking in time for held RX frames (held
// TX frames have the layer's timer).
func (f *IO) Wait(timeout time.Duration) error {
	if len(f.rxHeld) > 0 {
		now := time.Now()
		for _, h := range f.rxHeld {
			if h.passed {
				return nil
			}
			timeout = min(timeout, max(h.due.Sub(now), 0))
		}
		if timeout == 0 {
			return nil
		}
	}
	return f.IO.Wait(timeout)
}

// Alloc implements frameio.IO.
func (f *IO) Alloc() (uint64, bool) {
	if f.heldN.Load() == 0 {
		return f.IO.Alloc()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.IO.Alloc()
}

// Free implements frameio.IO.
func (f *IO) Free(addr uint64) {
	if f.heldN.Load() == 0 {
		f.IO.Free(addr)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.IO.Free(addr)
}

// Complete implements frameio.IO.
func (f *IO) Complete() int {
	if f.heldN.Load() == 0 {
		return f.IO.Complete()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.IO.Complete()
}

// Enqueue implements frameio.IO: the hook and the faults are applied
// frame by frame, and held frames that are due, or that a frame has now
// overtaken, go first.
func (f *IO) Enqueue(descs []xsk.Desc) int {
	hook := f.txHook.Load()
	if hook == nil && f.heldN.Load() == 0 && !f.tx.rates.Load().active() {
		return f.IO.Enqueue(descs)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.noteHeld()
	f.releaseTx()
	now := time.Now()
	for i := range descs {
		d := descs[i]
		if hook != nil && !(*hook)(f.IO.Frame(d.Addr)[:d.Len]) {
			f.IO.Free(d.Addr)
			continue
		}
		switch k := f.tx.draw(); k {
		case faultDrop:
			f.tx.dropped.Add(1)
			f.IO.Free(d.Addr)
			continue
		case faultCorrupt:
			if f.tx.corrupt(f.IO.Frame(d.Addr)[:d.Len]) {
				f.tx.corrupted.Add(1)
			}
		case faultDuplicate:
			addr, ok := f.IO.Alloc()
			if !ok {
				f.tx.skipped.Add(1)
				break
			}
			copy(f.IO.Frame(addr), f.IO.Frame(d.Addr)[:d.Len])
			pair := [2]xsk.Desc{d, {Addr: addr, Len: d.Len}}
			n := f.IO.Enqueue(pair[:])
			if n < 2 {
				f.IO.Free(addr)
			}
			if n == 0 {
				f.releaseTx()
				return i
			}
			f.tx.duplicated.Add(1)
			f.passTx()
			continue
		case faultReorder, faultDelay:
			f.txHeld = append(f.txHeld, f.tx.hold(d, k, now))
			continue
		}
		if f.IO.Enqueue(descs[i:i+1]) == 0 {
			f.releaseTx()
			return i
		}
		f.passTx()
	}
	// A reordered frame goes right after the frame that overtook it.
	f.releaseTx()
	return len(descs)
}

// noteHeld publishes len(txHeld). Under mu.
func (f *IO) noteHeld() { f.heldN.Store(int32(len(f.txHeld))) }

// passTx notes that a frame went ahead of the held ones. Under mu.
func (f *IO) passTx() {
	for i := range f.txHeld {
		f.txHeld[i].passed = true
	}
}

// releaseTx enqueues the held TX frames that are due (what the ring has
// no room for stays held) and arms the timer for the rest. Under mu.
func (f *IO) releaseTx() {
	if len(f.txHeld) == 0 {
		return
	}
	now := time.Now()
	k := 0
	var next time.Time
	for _, h := range f.txHeld {
		if h.passed || !now.Before(h.due) {
			f.txOne[0] = h.desc
			if f.IO.Enqueue(f.txOne[:]) == 1 {
				continue
			}
			// No room: try again soon.
			h.due = now.Add(50 * time.Microsecond)
			h.passed = false
		}
		if next.IsZero() || h.due.Before(next) {
			next = h.due
		}
		f.txHeld[k] = h
		k++
	}
	f.txHeld = f.txHeld[:k]
	if k > 0 && !f.closed && (f.armed.IsZero() || next.Before(f.armed)) {
		f.armed = next
		f.timer.Reset(next.Sub(now))
	}
}

// fire is the timer's: it releases what is due and kicks it out, as no
// writer may come to do it.
func (f *IO) fire() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.armed = time.Time{}
	before := len(f.txHeld)
	f.releaseTx()
	released := before - len(f.txHeld)
	f.noteHeld()
	if released > 0 {
		// Under the lock, so that Close cannot close the socket below
		// while the kick uses it (a race the detector caught). Only
		// the timer kicks here, and only while frames are held.
		f.IO.Kick()
	}
	f.mu.Unlock()
}

// Close implements frameio.IO: the held TX frames go back to the pool
// below, held RX copies to the layer's own, then the layers below close.
// The worker must have stopped.
func (f *IO) Close() error {
	f.mu.Lock()
	f.closed = true
	f.timer.Stop()
	for _, h := range f.txHeld {
		f.IO.Free(h.desc.Addr)
	}
	f.txHeld = f.txHeld[:0]
	f.noteHeld()
	f.mu.Unlock()
	for _, h := range f.rxHeld {
		f.ownFree = append(f.ownFree, h.desc.Addr)
	}
	f.rxHeld = f.rxHeld[:0]
	return f.IO.Close()
}
