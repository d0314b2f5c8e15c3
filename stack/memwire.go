package stack

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/ring"
	"github.com/ustack-dev/ustack/xsk"
)

// memEnd is one end of an in-memory wire: frame I/O whose frames live in a
// shared arena and travel through ring views, with no kernel involved.
// Each end transmits from frames of its own; the receiver hands them back
// through a return ring.
type memEnd struct {
	arena     []byte
	frameSize uint64

	out    *ring.Producer[xsk.Desc] // frames to the peer (TX side)
	retIn  *ring.Consumer[uint64]   // our frames coming back (TX side)
	free   []uint64                 // our idle frames (TX side)
	in     *ring.Consumer[xsk.Desc] // frames from the peer (RX side)
	retOut *ring.Producer[uint64]   // the peer's frames going back (RX side)

	kicks atomic.Uint64 // kicks that handed frames to the peer

	// outMu orders Enqueue (under the queue's TX lock) with Kick and
	// TxQueued (from any goroutine) on the out ring, as the kernel's
	// own locking does for an AF_XDP socket.
	outMu sync.Mutex

	wake      chan struct{} // signalled when frames arrive for us
	peerWake  chan struct{}
	interrupt chan struct{}
	timer     *time.Timer

	// drop, when set, is asked for every frame enqueued and discards it
	// when it returns true; mangle, when set, may see and change every
	// frame enqueued (fault injection and taps in tests). Called on the
	// TX side; set at any time with setDrop and setMangle. Neither may
	// keep the frame.
	drop   atomic.Pointer[func(frame []byte) bool]
	mangle atomic.Pointer[func(frame []byte)]
}

func (m *memEnd) setDrop(f func(frame []byte) bool) { m.drop.Store(&f) }
func (m *memEnd) setMangle(f func(frame []byte))    { m.mangle.Store(&f) }

// newMemWire returns the two ends of a wire with frames frames of
// frameSize bytes per direction. frames must be a power of two.
func newMemWire(frames int, frameSize int) (*memEnd, *memEnd, error) {
	arena := make([]byte, 2*frames*frameSize)
	a := &memEnd{arena: arena, frameSize: uint64(frameSize), wake: make(chan struct{}, 1), interrupt: make(chan struct{}, 1)}
	b := &memEnd{arena: arena, frameSize: uint64(frameSize), wake: make(chan struct{}, 1), interrupt: make(chan struct{}, 1)}
	a.peerWake, b.peerWake = b.wake, a.wake
	var err error
	for _, dir := range []struct{ tx, rx *memEnd }{{a, b}, {b, a}} {
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

func (m *memEnd) Receive(descs []xsk.Desc) int {
	idx, n := m.in.Peek(uint32(len(descs)))
	for i := uint32(0); i < n; i++ {
		descs[i] = *m.in.At(idx + i)
	}
	m.in.Release(n)
	return int(n)
}

func (m *memEnd) Recycle(descs []xsk.Desc) {
	// The return ring is as large as the peer's frame count, so it
	// always has room.
	idx, n := m.retOut.Reserve(uint32(len(descs)))
	for i := uint32(0); i < n; i++ {
		*m.retOut.At(idx + i) = descs[i].Addr
	}
	m.retOut.Submit(n)
}

func (m *memEnd) Refill() int { return 0 }

func (m *memEnd) Data(d xsk.Desc) []byte {
	return m.arena[d.Addr : d.Addr+uint64(d.Len) : d.Addr+uint64(d.Len)]
}

func (m *memEnd) Alloc() (uint64, bool) {
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

func (m *memEnd) Free(addr uint64) { m.free = append(m.free, addr) }

func (m *memEnd) Frame(addr uint64) []byte {
	return m.arena[addr : addr+m.frameSize : addr+m.frameSize]
}

// Enqueue puts frames on the wire's TX ring; like an AF_XDP socket in
// copy mode, the peer sees them only after a Kick.
func (m *memEnd) Enqueue(descs []xsk.Desc) int {
	drop, mangle := m.drop.Load(), m.mangle.Load()
	m.outMu.Lock()
	defer m.outMu.Unlock()
	idx, n := m.out.Reserve(uint32(len(descs)))
	k := uint32(0)
	for i := uint32(0); i < n; i++ {
		if drop != nil && (*drop)(m.arena[descs[i].Addr:descs[i].Addr+uint64(descs[i].Len)]) {
			m.free = append(m.free, descs[i].Addr)
			continue
		}
		if mangle != nil {
			(*mangle)(m.arena[descs[i].Addr : descs[i].Addr+uint64(descs[i].Len)])
		}
		*m.out.At(idx + k) = descs[i]
		k++
	}
	m.out.Cancel(n - k)
	return int(n)
}

func (m *memEnd) Complete() int { return 0 }

// TxQueued reports the frames enqueued but not yet kicked to the peer.
func (m *memEnd) TxQueued() int {
	m.outMu.Lock()
	defer m.outMu.Unlock()
	return int(m.out.Pending())
}

// Kick hands what Enqueue queued to the peer and wakes it.
func (m *memEnd) Kick() error {
	m.outMu.Lock()
	n := m.out.Pending()
	m.out.Submit(n)
	m.outMu.Unlock()
	if n == 0 {
		return nil
	}
	m.kicks.Add(1)
	select {
	case m.peerWake <- struct{}{}:
	default:
	}
	return nil
}

func (m *memEnd) Wait(timeout time.Duration) error {
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

func (m *memEnd) Interrupt() {
	select {
	case m.interrupt <- struct{}{}:
	default:
	}
}

func (m *memEnd) Close() error { return nil }

// NewPipe returns two stacks joined by an in-memory Ethernet wire (MTU
// 1500): no interface, privileges or kernel involved, for testing
// applications, and with Config.Faults a bad network, in ordinary tests.
// Each Config is validated as for New; Interface, Queues, Pin and
// ForceGenericXDP are ignored (one queue each); the stacks' addresses
// should share a prefix. Close both stacks when done.
func NewPipe(a, b Config) (*Stack, *Stack, error) {
	wa, wb, err := newMemWire(1024, 2048)
	if err != nil {
		return nil, nil, err
	}
	var stacks [2]*Stack
	for i, c := range []struct {
		cfg  Config
		end  *memEnd
		name string
	}{{a, wa, "pipe0"}, {b, wb, "pipe1"}} {
		cfg := c.cfg
		cfg.Interface, cfg.Queues, cfg.Pin, cfg.ForceGenericXDP = c.name, 1, false, false
		cfg.setDefaults()
		if err := cfg.validate(); err != nil {
			if i == 1 {
				stacks[0].Close()
			}
			return nil, nil, err
		}
		mac := net.HardwareAddr{2, 0, 0, 0, 0xfe, byte(i + 1)}
		s, err := newStack(cfg, []frameIO{c.end}, linkInfo{mtu: 1500, mac: mac}, nil)
		if err != nil {
			if i == 1 {
				stacks[0].Close()
			}
			return nil, nil, err
		}
		stacks[i] = s
	}
	return stacks[0], stacks[1], nil
}
