package fastflow

import (
	"errors"
	"fmt"
	"math/bits"
)

// Slab is one queue's fast-path flows and send rings, sized to the work:
// flows are made in chunks of 64 as connections are promoted, and a flow
// holds a send ring only while it has bytes written and unacknowledged
// (a request/response flow between replies holds none), rings made in
// chunks as they are needed and given back when a chunk's are all free.
// Memory then follows the connections carried and the replies in flight,
// not a configured maximum. No chunk holds a pointer, so the garbage
// collector does not scan them; the rings live outside the Go heap (on
// Linux in one anonymous mapping, arena), so a chunk given back leaves
// the process's resident memory at once. A chunk never moves, so a *Flow
// stays valid until Free. A Slab belongs to its queue:
// Alloc, Free, AllocRing and FreeRing must not run concurrently with each
// other; Flow and Ring may run concurrently with them for indices already
// allocated.
type Slab struct {
	flows     [][]Flow // chunks of chunkFlows; len fixed at NewSlab
	free      []uint32 // free flow indices in made chunks
	made      int      // flow chunks made
	rings     [][]byte // chunks of ringChunk rings; len fixed at NewSlab
	arena     arena    // the rings' memory
	freeRings []uint32
	ringsFree []uint8 // per chunk of rings: how many of its rings are free
	madeRings int     // chunks of rings made and not given back
	ringSize  int
	inUse     int
	max       int // SlabConfig.Flows
}

// SlabConfig sizes a Slab.
type SlabConfig struct {
	// Flows is the most flows the slab holds at once (and the most send
	// rings).
	Flows int
	// RingSize is each send ring's size in bytes, a power of two: the
	// most a flow holds written and unacknowledged.
	RingSize int
}

// DefaultSlabConfig returns 1024 flows with 16 KiB send rings: a
// request/response flow rarely has more than a few segments outstanding,
// and a larger write demotes it.
func DefaultSlabConfig() SlabConfig { return SlabConfig{Flows: 1024, RingSize: 16 << 10} }

const (
	chunkFlows = 64 // flows made at once: 16 KiB
	ringChunk  = 4  // rings made at once
	minRing    = 4096
)

// ErrSlabFull reports that every flow (or ring) of the slab is in use.
var ErrSlabFull = errors.New("fastflow: slab full")

// NewSlab returns an empty slab sized by c. It makes no flow or ring yet.
func NewSlab(c SlabConfig) (*Slab, error) {
	if c.Flows <= 0 || c.Flows > 1<<24 {
		return nil, fmt.Errorf("fastflow: %d flows", c.Flows)
	}
	if c.RingSize < minRing || bits.OnesCount(uint(c.RingSize)) != 1 || c.RingSize > 1<<30 {
		return nil, fmt.Errorf("fastflow: ring size %d: not a power of two from %d", c.RingSize, minRing)
	}
	return &Slab{
		flows:     make([][]Flow, (c.Flows+chunkFlows-1)/chunkFlows),
		rings:     make([][]byte, (c.Flows+ringChunk-1)/ringChunk),
		ringsFree: make([]uint8, (c.Flows+ringChunk-1)/ringChunk),
		ringSize:  c.RingSize,
		max:       c.Flows,
	}, nil
}

// Alloc takes a free flow and returns its index, or ErrSlabFull. The flow
// is zero until Init.
func (s *Slab) Alloc() (uint32, error) {
	if len(s.free) == 0 {
		if s.made == len(s.flows) {
			return 0, ErrSlabFull
		}
		s.flows[s.made] = make([]Flow, chunkFlows)
		for i := chunkFlows - 1; i >= 0; i-- {
			if j := s.made*chunkFlows + i; j < s.max {
				s.free = append(s.free, uint32(j))
			}
		}
		s.made++
	}
	i := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	s.inUse++
	return i, nil
}

// Free returns flow i to the free list and clears it.
func (s *Slab) Free(i uint32) {
	*s.Flow(i) = Flow{}
	s.free = append(s.free, i)
	s.inUse--
}

// Flow returns flow i. The pointer is into the slab: valid until Free.
func (s *Slab) Flow(i uint32) *Flow { return &s.flows[i/chunkFlows][i%chunkFlows] }

// AllocRing takes a free send ring and returns its index, or ErrSlabFull.
// Its bytes are whatever the last flow left: a flow reads only what it
// wrote.
func (s *Slab) AllocRing() (uint32, error) {
	if len(s.freeRings) == 0 {
		c := 0
		for c < len(s.rings) && s.rings[c] != nil {
			c++
		}
		if c == len(s.rings) || c*ringChunk >= s.max {
			return 0, ErrSlabFull
		}
		b, err := s.arena.make(s, c, ringChunk*s.ringSize, len(s.rings))
		if err != nil {
			return 0, fmt.Errorf("fastflow: send rings: %w", err)
		}
		s.rings[c] = b
		s.ringsFree[c] = 0
		for i := ringChunk - 1; i >= 0; i-- {
			if j := c*ringChunk + i; j < s.max {
				s.freeRings = append(s.freeRings, uint32(j))
				s.ringsFree[c]++
			}
		}
		s.madeRings++
	}
	i := s.freeRings[len(s.freeRings)-1]
	s.freeRings = s.freeRings[:len(s.freeRings)-1]
	s.ringsFree[i/ringChunk]--
	return i, nil
}

// FreeRing returns ring i to the free list. A chunk of rings all free is
// given back to the system while another chunk's free rings are spare:
// memory follows the flows with bytes in flight, with a chunk of slack.
func (s *Slab) FreeRing(i uint32) {
	s.freeRings = append(s.freeRings, i)
	c := i / ringChunk
	s.ringsFree[c]++
	if int(s.ringsFree[c]) < s.ringsIn(c) || len(s.freeRings)-int(s.ringsFree[c]) < ringChunk {
		return
	}
	// Drop chunk c's rings from the free list, then the chunk.
	kept := s.freeRings[:0]
	for _, j := range s.freeRings {
		if j/ringChunk != c {
			kept = append(kept, j)
		}
	}
	s.freeRings = kept
	s.rings[c] = nil
	s.arena.free(int(c))
	s.ringsFree[c] = 0
	s.madeRings--
}

// ringsIn returns how many rings chunk c holds (the last may hold fewer).
func (s *Slab) ringsIn(c uint32) int {
	return min(ringChunk, s.max-int(c)*ringChunk)
}

// Ring returns send ring i, the ring argument of a flow's Write and Cut.
func (s *Slab) Ring(i uint32) []byte {
	off := int(i%ringChunk) * s.ringSize
	return s.rings[i/ringChunk][off : off+s.ringSize : off+s.ringSize]
}

// RingSize returns the size of each send ring.
func (s *Slab) RingSize() int { return s.ringSize }

// Len returns the number of flows in use.
func (s *Slab) Len() int { return s.inUse }
