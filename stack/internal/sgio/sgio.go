package sgio

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/xsk"
)

// Lower is the frame I/O the layer needs below it: frames in one memory
// region (Span gives n bytes from a frame's start, running on into the
// frames after it) and the TX ring's free slots (TxRoom, up to want), so
// that a chain goes on the ring whole or not at all.
type Lower interface {
	frameio.IO
	Span(addr uint64, n int) []byte
	TxRoom(want int) int
}

// Stats are the layer's counters.
type Stats = frameio.SGStats

// slotBase is where the addresses of the layer's reassembly buffers
// start: above any UMEM offset.
const slotBase = uint64(1) << 62

// maxSlots bounds the reassembly buffers one queue holds (each as large
// as the largest frame), so the RX frames the stack holds between
// Receive and Recycle are bounded in memory too.
const maxSlots = 512

// IO is the layer over one queue's frame I/O.
type IO struct {
	frameio.IO
	lowerIO   Lower
	frameSize uint64
	maxFrame  int

	// RX, the worker's.
	in       []xsk.Desc // what the layer below handed over
	back     []xsk.Desc // chain parts going back below
	slots    [][]byte   // reassembly buffers
	freeSlot []int
	chain    bool // in a chain
	slot     int  // its buffer, -1 if dropping it
	have     int  // its bytes so far
	lower    []xsk.Desc

	// TX, under the queue's TX lock.
	units []uint64          // free units (their first frame's address)
	unit  uint64            // bytes a unit spans
	first map[uint64]uint64 // every unit frame's unit
	left  map[uint64]int    // frames of a unit's chain still out
	out   []xsk.Desc

	rxChains, rxDropped, txChains atomic.Uint64
}

var _ frameio.IO = (*IO)(nil)

// New wraps inner, whose frames are frameSize bytes, for frames of up to
// maxFrame bytes. It takes every transmit frame inner holds. inner must
// be a Lower.
func New(inner frameio.IO, frameSize, maxFrame int) (*IO, error) {
	low, ok := inner.(Lower)
	if !ok {
		return nil, errors.New("sgio: the frame I/O below has no Span or TxRoom")
	}
	if frameSize <= 0 || maxFrame <= 0 {
		return nil, fmt.Errorf("sgio: frames of %d bytes, frames of up to %d", frameSize, maxFrame)
	}
	per := (maxFrame + frameSize - 1) / frameSize
	s := &IO{IO: inner, lowerIO: low, frameSize: uint64(frameSize), maxFrame: maxFrame, unit: uint64(per * frameSize),
		first: map[uint64]uint64{}, left: map[uint64]int{}}
	var all []uint64
	for {
		a, ok := inner.Alloc()
		if !ok {
			break
		}
		all = append(all, a)
	}
	slices.Sort(all)
	// Units of per adjacent frames; frames that make no whole unit stay
	// the layer's, unused.
	for i := 0; i+per <= len(all); {
		if all[i+per-1]-all[i] != uint64(per-1)*s.frameSize {
			i++
			continue
		}
		s.units = append(s.units, all[i])
		for j := 0; j < per; j++ {
			s.first[all[i+j]] = all[i]
		}
		i += per
	}
	if len(s.units) == 0 {
		for _, a := range all {
			inner.Free(a)
		}
		return nil, fmt.Errorf("sgio: %d transmit frames make no unit of %d adjacent frames", len(all), per)
	}
	return s, nil
}

// Receive implements frameio.IO.
func (s *IO) Receive(descs []xsk.Desc) int {
	if cap(s.in) < len(descs) {
		s.in = make([]xsk.Desc, len(descs))
	}
	n := s.IO.Receive(s.in[:len(descs)])
	out := 0
	back := s.back[:0]
	for _, d := range s.in[:n] {
		if !s.chain && d.Options&xsk.OptContd == 0 {
			descs[out] = d
			out++
			continue
		}
		if !s.chain {
			s.chain, s.have, s.slot = true, 0, s.takeSlot()
		}
		if s.slot >= 0 {
			if s.have+int(d.Len) > s.maxFrame {
				s.freeSlot = append(s.freeSlot, s.slot)
				s.slot = -1
			} else {
				s.have += copy(s.slots[s.slot][s.have:], s.IO.Data(d))
			}
		}
		back = append(back, d)
		if d.Options&xsk.OptContd != 0 {
			continue
		}
		s.chain = false
		if s.slot < 0 {
			s.rxDropped.Add(1)
			continue
		}
		s.rxChains.Add(1)
		descs[out] = xsk.Desc{Addr: slotBase + uint64(s.slot)*uint64(s.maxFrame), Len: uint32(s.have)}
		out++
	}
	if len(back) > 0 {
		s.IO.Recycle(back)
	}
	s.back = back[:0]
	return out
}

// takeSlot returns a free reassembly buffer, or -1 if all are out.
func (s *IO) takeSlot() int {
	if n := len(s.freeSlot); n > 0 {
		i := s.freeSlot[n-1]
		s.freeSlot = s.freeSlot[:n-1]
		return i
	}
	if len(s.slots) == maxSlots {
		return -1
	}
	s.slots = append(s.slots, make([]byte, s.maxFrame))
	return len(s.slots) - 1
}

// Data implements frameio.IO.
func (s *IO) Data(d xsk.Desc) []byte {
	if d.Addr >= slotBase {
		b := s.slots[(d.Addr-slotBase)/uint64(s.maxFrame)]
		return b[:d.Len:d.Len]
	}
	return s.IO.Data(d)
}

// Recycle implements frameio.IO.
func (s *IO) Recycle(descs []xsk.Desc) {
	lower := s.lower[:0]
	for _, d := range descs {
		if d.Addr >= slotBase {
			s.freeSlot = append(s.freeSlot, int((d.Addr-slotBase)/uint64(s.maxFrame)))
			continue
		}
		lower = append(lower, d)
	}
	if len(lower) > 0 {
		s.IO.Recycle(lower)
	}
	s.lower = lower[:0]
}

// Alloc implements frameio.IO: a unit, for a frame of up to the largest
// size.
func (s *IO) Alloc() (uint64, bool) {
	if len(s.units) == 0 && s.Complete() == 0 {
		return 0, false
	}
	a := s.units[len(s.units)-1]
	s.units = s.units[:len(s.units)-1]
	return a, true
}

// Free implements frameio.IO.
func (s *IO) Free(addr uint64) { s.units = append(s.units, addr) }

// Frame implements frameio.IO: the unit's whole span.
func (s *IO) Frame(addr uint64) []byte {
	return s.lowerIO.Span(addr, int(s.unit))
}

// Enqueue implements frameio.IO: each frame goes on the TX ring as the
// chain of its frames, whole chains only, as many as the ring has room
// for.
func (s *IO) Enqueue(descs []xsk.Desc) int {
	parts := 0
	for _, d := range descs {
		parts += s.parts(d)
	}
	room := s.lowerIO.TxRoom(parts)
	out := s.out[:0]
	taken := 0
	for _, d := range descs {
		n := s.parts(d)
		if len(out)+n > room {
			break
		}
		for i := 0; i < n; i++ {
			part := xsk.Desc{Addr: d.Addr + uint64(i)*s.frameSize, Len: uint32(min(s.frameSize, uint64(d.Len)-uint64(i)*s.frameSize))}
			if i < n-1 {
				part.Options = xsk.OptContd
			}
			out = append(out, part)
		}
		if n > 1 {
			s.txChains.Add(1)
		}
		s.left[d.Addr] = n
		taken++
	}
	// The ring had room for all of out: the TX lock keeps every other
	// producer away.
	s.IO.Enqueue(out)
	s.out = out[:0]
	return taken
}

// parts is how many frames d's chain takes.
func (s *IO) parts(d xsk.Desc) int {
	return max(1, int((uint64(d.Len)+s.frameSize-1)/s.frameSize))
}

// Complete implements frameio.IO: frames that came back free their units
// once the unit's whole chain has.
func (s *IO) Complete() int {
	s.IO.Complete()
	freed := 0
	for {
		a, ok := s.IO.Alloc()
		if !ok {
			break
		}
		u, ok := s.first[a]
		if !ok {
			continue
		}
		if s.left[u]--; s.left[u] == 0 {
			delete(s.left, u)
			s.units = append(s.units, u)
			freed++
		}
	}
	return freed
}

// ReadStats implements frameio.IO.
func (s *IO) ReadStats(st *frameio.Stats) {
	s.IO.ReadStats(st)
	st.SG = Stats{RxChains: s.rxChains.Load(), RxChainsDropped: s.rxDropped.Load(), TxChains: s.txChains.Load()}
}
