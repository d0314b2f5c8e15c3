package ring

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrSize reports a ring size that is zero, not a power of two, or too large.
var ErrSize = errors.New("ring size must be a power of two between 1 and 2^31")

// shared is the state both views of a ring point into. For AF_XDP rings it
// lives in memory mapped from the socket; for in-process rings in a Go
// allocation.
type shared[T any] struct {
	producer *atomic.Uint32 // written by the producer only
	consumer *atomic.Uint32 // written by the consumer only
	flags    *atomic.Uint32 // written by the kernel for AF_XDP rings; may be nil
	descs    []T            // len(descs) is a power of two
	mask     uint32         // len(descs)-1
}

func checkSize(size uint32) error {
	if size == 0 || size&(size-1) != 0 || size > 1<<31 {
		return fmt.Errorf("%w: got %d", ErrSize, size)
	}
	return nil
}

// Producer is the producing view of a ring.
type Producer[T any] struct {
	s shared[T]
	// cachedProd is the next index Reserve hands out; it runs ahead of
	// *producer by the entries reserved but not yet submitted.
	cachedProd uint32
	// cachedCons is the last consumer index read plus the ring size: the
	// first index the producer may not write.
	cachedCons uint32
}

// Consumer is the consuming view of a ring.
type Consumer[T any] struct {
	s shared[T]
	// cachedCons is the next index Peek hands out; it runs ahead of
	// *consumer by the entries peeked but not yet released.
	cachedCons uint32
	// cachedProd is the last producer index read.
	cachedProd uint32
}

func newProducer[T any](s shared[T]) *Producer[T] {
	p := s.producer.Load()
	return &Producer[T]{s: s, cachedProd: p, cachedCons: s.consumer.Load() + uint32(len(s.descs))}
}

func newConsumer[T any](s shared[T]) *Consumer[T] {
	c := s.consumer.Load()
	return &Consumer[T]{s: s, cachedCons: c, cachedProd: s.producer.Load()}
}

// Size returns the number of descriptors in the ring.
func (p *Producer[T]) Size() uint32 { return uint32(len(p.s.descs)) }

// Free returns how many descriptors can be reserved now, refreshing the
// cached consumer index only if fewer than want are known to be free.
func (p *Producer[T]) Free(want uint32) uint32 {
	free := p.cachedCons - p.cachedProd
	if free >= want {
		return free
	}
	p.cachedCons = p.s.consumer.Load() + uint32(len(p.s.descs))
	return p.cachedCons - p.cachedProd
}

// Reserve claims up to n descriptors for writing and returns the index of
// the first and how many were claimed (possibly 0 when the ring is full).
// The caller fills them through At(idx), At(idx+1), … and then publishes
// them with Submit or gives them back with Cancel.
func (p *Producer[T]) Reserve(n uint32) (idx, got uint32) {
	free := p.Free(n)
	if n > free {
		n = free
	}
	idx = p.cachedProd
	p.cachedProd += n
	return idx, n
}

// At returns the descriptor at ring index idx (taken modulo the size).
func (p *Producer[T]) At(idx uint32) *T { return &p.s.descs[idx&p.s.mask] }

// Submit publishes the first n reserved descriptors to the consumer.
func (p *Producer[T]) Submit(n uint32) {
	// Release store: the descriptor writes above become visible before the
	// new producer index.
	p.s.producer.Store(p.s.producer.Load() + n)
}

// Cancel returns the last n reserved, unsubmitted descriptors to the ring.
func (p *Producer[T]) Cancel(n uint32) { p.cachedProd -= n }

// Queued returns how many submitted descriptors the consumer has not yet
// released. It reads only the shared indices, so unlike the other methods
// it may be called from any goroutine (the answer may be stale at once).
func (p *Producer[T]) Queued() uint32 { return p.s.producer.Load() - p.s.consumer.Load() }

// Pending returns how many descriptors are reserved but not submitted.
func (p *Producer[T]) Pending() uint32 { return p.cachedProd - p.s.producer.Load() }

// Flags returns the ring's flags word (for AF_XDP, XDP_RING_NEED_WAKEUP), or
// 0 for a ring without one.
func (p *Producer[T]) Flags() uint32 {
	if p.s.flags == nil {
		return 0
	}
	return p.s.flags.Load()
}

// Size returns the number of descriptors in the ring.
func (c *Consumer[T]) Size() uint32 { return uint32(len(c.s.descs)) }

// Available returns how many descriptors can be peeked now, refreshing the
// cached producer index only if none are known.
func (c *Consumer[T]) Available() uint32 {
	n := c.cachedProd - c.cachedCons
	if n == 0 {
		// Acquire load: descriptors up to the new index are visible.
		c.cachedProd = c.s.producer.Load()
		n = c.cachedProd - c.cachedCons
	}
	return n
}

// Backlog returns how many filled descriptors wait to be peeked, reading
// the producer's index afresh.
func (c *Consumer[T]) Backlog() uint32 {
	// Acquire load, as in Available.
	c.cachedProd = c.s.producer.Load()
	return c.cachedProd - c.cachedCons
}

// Peek claims up to n filled descriptors for reading and returns the index
// of the first and how many were claimed (possibly 0 when the ring is
// empty). The caller reads them through At and then hands the slots back to
// the producer with Release, or un-peeks them with Cancel.
func (c *Consumer[T]) Peek(n uint32) (idx, got uint32) {
	avail := c.Available()
	if n > avail {
		n = avail
	}
	idx = c.cachedCons
	c.cachedCons += n
	return idx, n
}

// At returns the descriptor at ring index idx (taken modulo the size).
func (c *Consumer[T]) At(idx uint32) *T { return &c.s.descs[idx&c.s.mask] }

// Release hands the first n peeked descriptors' slots back to the producer.
func (c *Consumer[T]) Release(n uint32) {
	// Release store: our reads of the descriptors complete before the
	// producer may overwrite them.
	c.s.consumer.Store(c.s.consumer.Load() + n)
}

// Cancel un-peeks the last n peeked, unreleased descriptors, so the next
// Peek returns them again.
func (c *Consumer[T]) Cancel(n uint32) { c.cachedCons -= n }

// Flags returns the ring's flags word, or 0 for a ring without one.
func (c *Consumer[T]) Flags() uint32 {
	if c.s.flags == nil {
		return 0
	}
	return c.s.flags.Load()
}

// cacheLine pads the in-process indices apart so that producer and consumer
// do not share a cache line.
const cacheLine = 64

type indices struct {
	producer atomic.Uint32
	_        [cacheLine - 4]byte
	consumer atomic.Uint32
	_        [cacheLine - 4]byte
	flags    atomic.Uint32
}

// New creates an in-process ring of size descriptors and returns its two
// views. The size must be a power of two.
func New[T any](size uint32) (*Producer[T], *Consumer[T], error) {
	if err := checkSize(size); err != nil {
		return nil, nil, err
	}
	ix := new(indices)
	s := shared[T]{
		producer: &ix.producer,
		consumer: &ix.consumer,
		flags:    &ix.flags,
		descs:    make([]T, size),
		mask:     size - 1,
	}
	return newProducer(s), newConsumer(s), nil
}
