package memwire

import (
	"slices"
	"sync"
	"time"

	"github.com/ustack-dev/ustack/ring"
	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/xsk"
)

// End is one end of a wire.
type End struct {
	arena     []byte
	frameSize uint64

	out    *ring.Producer[xsk.Desc] // frames to the peer (TX side)
	retIn  *ring.Consumer[uint64]   // our frames coming back (TX side)
	free   []uint64                 // our idle frames (TX side)
	in     *ring.Consumer[xsk.Desc] // frames from the peer (RX side)
	retOut *ring.Producer[uint64]   // the peer's frames going back (RX side)

	// outMu orders Enqueue (under the queue's TX lock) with Kick and
	// TxQueued (from any goroutine) on the out ring, as the kernel's
	// own locking does for an AF_XDP socket.
	outMu sync.Mutex

	wake      chan struct{} // signalled when frames arrive for us
	peerWake  chan struct{}
	interrupt chan struct{}
	timer     *time.Timer
}

var _ frameio.IO = (*End)(nil)

// New returns the two ends of a wire with frames frames of frameSize
// bytes per direction. frames must be a power of two.
func New(frames int, frameSize int) (*End, *End, error) {
	arena := make([]byte, 2*frames*frameSize)
	a := &End{arena: arena, frameSize: uint64(frameSize), wake: make(chan struct{}, 1), interrupt: make(chan struct{}, 1)}
	b := &End{arena: arena, frameSize: uint64(frameSize), wake: make(chan struct{}, 1), interrupt: make(chan struct{}, 1)}
	a.peerWake, b.peerWake = b.wake, a.wake
	var err error
	for _, dir := range []struct{ tx, rx *End }{{a, b}, {b, a}} {
		if dir.tx.out, dir.rx.in, err = ring.New[xsk.Desc](uint32(frames)); err != nil {
			return nil, nil, err
		}
		if dir.rx.retOut, dir.tx.retIn, err = ring.New[uint64](uint32(frames)); err != nil {
			return nil, nil, err
		}
	}
	for i := 0; i < frames; i++ {
		a.free = append(a.free, uint64(i)*uint64(frameSize))
		b.free = append(b.free, uint64(frames+i)*uint64(frameSize))
	}
	a.timer, b.timer = time.NewTimer(time.Hour), time.NewTimer(time.Hour)
	a.timer.Stop()
	b.timer.Stop()
	return a, b, nil
}

// Receive implements frameio.IO.
func (m *End) Receive(descs []xsk.Desc) int {
	idx, n := m.in.Peek(uint32(len(descs)))
	for i := uint32(0); i < n; i++ {
		descs[i] = *m.in.At(idx + i)
	}
	m.in.Release(n)
	return int(n)
}

// RxBacklog implements frameio.IO.
func (m *End) RxBacklog() int { return int(m.in.Backlog()) }

// Recycle implements frameio.IO: the frames go back to the peer.
func (m *End) Recycle(descs []xsk.Desc) {
	// The return ring is as large as the peer's frame count, so it
	// always has room.
	idx, n := m.retOut.Reserve(uint32(len(descs)))
	for i := uint32(0); i < n; i++ {
		*m.retOut.At(idx + i) = descs[i].Addr
	}
	m.retOut.Submit(n)
}

// Refill implements frameio.IO; a wire has no fill ring.
func (m *End) Refill() int { return 0 }

// Data implements frameio.IO.
func (m *End) Data(d xsk.Desc) []byte {
	return m.arena[d.Addr : d.Addr+uint64(d.Len) : d.Addr+uint64(d.Len)]
}

// Alloc implements frameio.IO, taking back frames the peer returned
// when none is idle.
func (m *End) Alloc() (uint64, bool) {
	if len(m.free) == 0 {
		idx, n := m.retIn.Peek(m.retIn.Size())
		for i := uint32(0); i < n; i++ {
			m.free = append(m.free, *m.retIn.At(idx + i))
		}
		m.retIn.Release(n)
		if len(m.free) == 0 {
			return 0, false
		}
	}
	a := m.free[len(m.free)-1]
	m.free = m.free[:len(m.free)-1]
	return a, true
}

// Free implements frameio.IO.
func (m *End) Free(addr uint64) { m.free = append(m.free, addr) }

// Frame implements frameio.IO.
func (m *End) Frame(addr uint64) []byte {
	return m.arena[addr : addr+m.frameSize : addr+m.frameSize]
}

// Span returns n bytes of the wire's memory from the frame at addr on,
// for a multi-buffer frame written across adjacent frames (sgio).
func (m *End) Span(addr uint64, n int) []byte {
	if n < 0 || addr+uint64(n) > uint64(len(m.arena)) {
		return nil
	}
	return m.arena[addr : addr+uint64(n) : addr+uint64(n)]
}

// TxRoom reports how many frames the ring to the peer has room for, up
// to want.
func (m *End) TxRoom(want int) int {
	m.outMu.Lock()
	defer m.outMu.Unlock()
	return int(m.out.Free(uint32(want)))
}

// EnqueueChain puts frame on the ring to the peer as a multi-buffer chain
// of the wire's frames (xsk.OptContd on every part but the last), for
// tests of chains; only the parts whose indexes are in keep go (nil: all),
// as if the others were lost. The peer sees it after a Kick. It reports
// false, enqueueing nothing, if frames or ring slots run short.
func (m *End) EnqueueChain(frame []byte, keep []int) bool {
	var descs []xsk.Desc
	fs := int(m.frameSize)
	for i := 0; i*fs < len(frame); i++ {
		addr, ok := m.Alloc()
		if !ok {
			for _, d := range descs {
				m.Free(d.Addr)
			}
			return false
		}
		part := frame[i*fs : min(len(frame), (i+1)*fs)]
		copy(m.Frame(addr), part)
		if keep != nil && !slices.Contains(keep, i) {
			m.Free(addr)
			continue
		}
		d := xsk.Desc{Addr: addr, Len: uint32(len(part))}
		if (i+1)*fs < len(frame) {
			d.Options = xsk.OptContd
		}
		descs = append(descs, d)
	}
	if m.TxRoom(len(descs)) < len(descs) {
		for _, d := range descs {
			m.Free(d.Addr)
		}
		return false
	}
	m.Enqueue(descs)
	return true
}

// Enqueue implements frameio.IO: it puts frames on the ring to the peer,
// which sees them only after a Kick.
func (m *End) Enqueue(descs []xsk.Desc) int {
	m.outMu.Lock()
	defer m.outMu.Unlock()
	idx, n := m.out.Reserve(uint32(len(descs)))
	for i := uint32(0); i < n; i++ {
		*m.out.At(idx + i) = descs[i]
	}
	return int(n)
}

// Complete implements frameio.IO; Alloc reaps returned frames itself.
func (m *End) Complete() int { return 0 }

// TxQueued implements frameio.IO: the frames enqueued but not yet kicked
// to the peer.
func (m *End) TxQueued() int {
	m.outMu.Lock()
	defer m.outMu.Unlock()
	return int(m.out.Pending())
}

// Kick implements frameio.IO: it hands what Enqueue queued to the peer
// and wakes it.
func (m *End) Kick() error {
	m.outMu.Lock()
	n := m.out.Pending()
	m.out.Submit(n)
	m.outMu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case m.peerWake <- struct{}{}:
	default:
	}
	return nil
}

// Wait implements frameio.IO.
func (m *End) Wait(timeout time.Duration) error {
	if m.in.Available() > 0 {
		return nil
	}
	m.timer.Reset(timeout)
	select {
	case <-m.wake:
	case <-m.interrupt:
	case <-m.timer.C:
	}
	m.timer.Stop()
	return nil
}

// Interrupt implements frameio.IO.
func (m *End) Interrupt() {
	select {
	case m.interrupt <- struct{}{}:
	default:
	}
}

// ReadStats implements frameio.IO; a wire keeps no counters of a
// socket's.
func (m *End) ReadStats(*frameio.Stats) {}

// Close implements frameio.IO; a wire holds nothing to give back.
func (m *End) Close() error { return nil }

// FramesAccounted counts the frames of m's own pool that are idle in its
// free list or return ring, or on the wire to peer (sent and not yet
// received, or enqueued and not yet kicked). With both ends stopped it
// is the wire's frame count unless a frame was lost.
func (m *End) FramesAccounted(peer *End) int {
	m.outMu.Lock()
	defer m.outMu.Unlock()
	return len(m.free) + ringCount(m.retIn) + int(m.out.Pending()) + ringCount(peer.in)
}

// IdleFrames takes back the frames the peer returned and counts m's idle
// frames. TX side only.
func (m *End) IdleFrames() int {
	idx, n := m.retIn.Peek(m.retIn.Size())
	for i := uint32(0); i < n; i++ {
		m.free = append(m.free, *m.retIn.At(idx + i))
	}
	m.retIn.Release(n)
	return len(m.free)
}

// ringCount counts what a consumer can take (Available alone counts only
// what it already knows of), leaving it all in place.
func ringCount[T any](c *ring.Consumer[T]) int {
	total := uint32(0)
	for {
		_, n := c.Peek(c.Size())
		if n == 0 {
			break
		}
		total += n
	}
	c.Cancel(total)
	return int(total)
}
