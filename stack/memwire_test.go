package stack

import (
	"sync/atomic"
	"testing"

	"github.com/ustack-dev/ustack/stack/internal/faultio"
	"github.com/ustack-dev/ustack/stack/internal/memwire"
	"github.com/ustack-dev/ustack/stack/internal/pcapio"
)

// memEnd is one end of a memory wire as the tests drive it: the wire's
// end (package memwire) under a fault injector (package faultio) with no
// faults, whose TX hook the tests set to drop or change the frames this
// end sends (setDrop, setMangle).
type memEnd struct {
	*faultio.IO
	wire *memwire.End

	drop   atomic.Pointer[func(frame []byte) bool]
	mangle atomic.Pointer[func(frame []byte)]
}

// newMemWire returns the two ends of a memory wire with frames frames of
// frameSize bytes per direction.
func newMemWire(frames, frameSize int) (*memEnd, *memEnd, error) {
	a, b, err := memwire.New(frames, frameSize)
	if err != nil {
		return nil, nil, err
	}
	return &memEnd{IO: faultio.New(a, faultio.Config{}, 0), wire: a}, &memEnd{IO: faultio.New(b, faultio.Config{}, 0), wire: b}, nil
}

// setDrop has f asked for every frame this end sends: it discards the
// frames for which f returns true. f must not keep the frame.
func (m *memEnd) setDrop(f func(frame []byte) bool) {
	m.drop.Store(&f)
	m.IO.SetTxHook(m.hook)
}

// setMangle has f see (and perhaps change) every frame this end sends,
// after setDrop's. f must not keep the frame.
func (m *memEnd) setMangle(f func(frame []byte)) {
	m.mangle.Store(&f)
	m.IO.SetTxHook(m.hook)
}

func (m *memEnd) hook(frame []byte) bool {
	if d := m.drop.Load(); d != nil && *d != nil && (*d)(frame) {
		return false
	}
	if f := m.mangle.Load(); f != nil && *f != nil {
		(*f)(frame)
	}
	return true
}

// wireFrames counts the frames of m's own pool that are accounted for:
// idle in its free list or return ring, or on the wire to the peer. Only
// when both ends have stopped.
func (m *memEnd) wireFrames(peer *memEnd) int { return m.wire.FramesAccounted(peer.wire) }

// TestMiddlewareConstants: the public constants that describe the
// middleware's behaviour are the middleware's own.
func TestMiddlewareConstants(t *testing.T) {
	if DefaultCaptureMaxBytes != pcapio.DefaultMaxBytes {
		t.Errorf("DefaultCaptureMaxBytes %d, pcapio uses %d", DefaultCaptureMaxBytes, pcapio.DefaultMaxBytes)
	}
	if ReorderTimeout != faultio.ReorderTimeout {
		t.Errorf("ReorderTimeout %v, faultio uses %v", ReorderTimeout, faultio.ReorderTimeout)
	}
}
