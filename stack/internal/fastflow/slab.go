package fastflow

import (
	"errors"
	"fmt"
	"math/bits"
)

// Slab is one queue's fast-path flows: a fixed array of Flow and an arena
// of send rings, one per flow at the flow's index, with a free list of
// indices. Neither array holds a pointer, so the garbage collector never
// scans them however many flows there are. A Slab belongs to its queue's
// worker.
type Slab struct {
	flows    []Flow
	free     []uint32 // stack of free indices
	arena    []byte   // send rings, RingSize bytes each
	ringSize int
}

// SlabConfig sizes a Slab.
type SlabConfig struct {
	// Flows is how many flows the slab holds at once.
	Flows int
	// RingSize is each flow's send ring in bytes, a power of two: the
	// most a flow holds written and unacknowledged.
	RingSize int
}

// DefaultSlabConfig returns 1024 flows with 16 KiB send rings (16 MiB of
// rings, 256 KiB of flow state): a request/response flow rarely has more
// than a few segments outstanding, and a larger write demotes it.
func DefaultSlabConfig() SlabConfig { return SlabConfig{Flows: 1024, RingSize: 16 << 10} }

// ErrSlabFull reports that every flow of the slab is in use.
var ErrSlabFull = errors.New("fastflow: slab full")

// NewSlab returns an empty slab sized by c.
func NewSlab(c SlabConfig) (*Slab, error) {
	if c.Flows <= 0 || c.Flows > 1<<24 {
		return nil, fmt.Errorf("fastflow: %d flows", c.Flows)
	}
	if c.RingSize < minRing || bits.OnesCount(uint(c.RingSize)) != 1 || c.RingSize > 1<<30 {
		return nil, fmt.Errorf("fastflow: ring size %d: not a power of two from %d", c.RingSize, minRing)
	}
	s := &Slab{
		flows:    make([]Flow, c.Flows),
		free:     make([]uint32, c.Flows),
		arena:    make([]byte, c.Flows*c.RingSize),
		ringSize: c.RingSize,
	}
	for i := range s.free {
		s.free[i] = uint32(c.Flows - 1 - i)
	}
	return s, nil
}

// minRing is the smallest send ring: a page.
const minRing = 4096

// Alloc takes a free flow and returns its index, or ErrSlabFull. The flow
// is zero until Init.
func (s *Slab) Alloc() (uint32, error) {
	if len(s.free) == 0 {
		return 0, ErrSlabFull
	}
	i := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	return i, nil
}

// Free returns flow i to the free list and clears it.
func (s *Slab) Free(i uint32) {
	s.flows[i] = Flow{}
	s.free = append(s.free, i)
}

// Flow returns flow i. The pointer is into the slab: valid until Free.
func (s *Slab) Flow(i uint32) *Flow { return &s.flows[i] }

// Ring returns flow i's send ring, the ring argument of its Write and Cut.
func (s *Slab) Ring(i uint32) []byte {
	off := int(i) * s.ringSize
	return s.arena[off : off+s.ringSize : off+s.ringSize]
}

// Len returns the number of flows in use.
func (s *Slab) Len() int { return len(s.flows) - len(s.free) }
