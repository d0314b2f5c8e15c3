package xsk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/ring"
	"golang.org/x/sys/unix"
)

// Socket is an AF_XDP socket bound to one queue of one interface.
type Socket struct {
	fd      int
	efd     int            // eventfd through which Interrupt wakes Wait
	pollFDs [2]unix.PollFd // RX side only: the socket and efd
	umem    *UMEM
	cfg     Config
	ifindex int

	fill *ring.Producer[uint64]
	comp *ring.Consumer[uint64]
	rx   *ring.Consumer[Desc]
	tx   *ring.Producer[Desc]
	maps [][]byte

	// rxFree holds idle receive frames not on the fill ring; only the RX
	// side touches it. txFree holds idle transmit frames; only the TX
	// side touches it. Both hold frame base addresses.
	rxFree, txFree []uint64
	zeroCopy       bool
	needWakeup     bool
	frameMask      uint64

	c counters
}

type counters struct {
	rxPackets, rxBytes, txPackets, txBytes atomic.Uint64
	kicks, kickRetries, fillEmpty, txFull  atomic.Uint64
}

var openSockets atomic.Int64

// OpenSockets returns the number of sockets open in the process, for leak
// checks.
func OpenSockets() int64 { return openSockets.Load() }

// Open creates a socket on u, bound to cfg.Interface queue cfg.Queue, in the
// calling thread's network namespace. The first socket on a UMEM registers
// it; later ones share it (they may be on other queues or interfaces).
// On failure everything Open did is undone.
func Open(u *UMEM, cfg Config) (_ *Socket, err error) {
	if u == nil || u.closed {
		return nil, fmt.Errorf("open xsk: %w: umem", ErrClosed)
	}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if want := uint64(cfg.RxFrames) + uint64(cfg.TxFrames); want > uint64(u.FreeFrames()) {
		return nil, fmt.Errorf("%w: socket wants %d frames, umem has %d unassigned", ErrConfig, want, u.FreeFrames())
	}
	if cfg.TxFrames > cfg.CompletionSize {
		// The kernel stops sending (EAGAIN) when it cannot post a
		// completion, leaving frames stuck on the TX ring.
		return nil, fmt.Errorf("%w: %d tx frames exceed the %d-entry completion ring", ErrConfig, cfg.TxFrames, cfg.CompletionSize)
	}
	if cfg.RxFrames < cfg.FillSize/2 {
		return nil, fmt.Errorf("%w: %d rx frames cannot keep a %d-entry fill ring fed", ErrConfig, cfg.RxFrames, cfg.FillSize)
	}
	ifc, err := LookupInterface(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("open xsk: %w", err)
	}
	if n := ifc.RxQueues; n > 0 && cfg.Queue >= n {
		return nil, fmt.Errorf("%w: queue %d out of range: %s has %d rx queues", ErrConfig, cfg.Queue, cfg.Interface, n)
	}

	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("create AF_XDP socket: %w (needs CAP_NET_RAW): %w", ErrPermission, err)
		}
		return nil, fmt.Errorf("create AF_XDP socket: %w", err)
	}
	s := &Socket{fd: fd, efd: -1, umem: u, cfg: cfg, ifindex: ifc.Index, frameMask: ^uint64(u.cfg.FrameSize - 1)}
	defer func() {
		if err != nil {
			s.release()
		}
	}()

	if s.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	s.pollFDs = [2]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(s.efd), Events: unix.POLLIN}}

	shared := u.regFD >= 0
	if !shared {
		if err := registerUMEM(fd, u.mem, u.cfg); err != nil {
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM) {
				return nil, fmt.Errorf("register %d-byte umem: %w (raise RLIMIT_MEMLOCK or run with CAP_IPC_LOCK): %w", len(u.mem), ErrPermission, err)
			}
			return nil, fmt.Errorf("register umem: %w", err)
		}
	}
	for _, o := range []struct {
		opt  int
		size uint32
	}{
		{unix.XDP_UMEM_FILL_RING, cfg.FillSize},
		{unix.XDP_UMEM_COMPLETION_RING, cfg.CompletionSize},
		{unix.XDP_RX_RING, cfg.RxSize},
		{unix.XDP_TX_RING, cfg.TxSize},
	} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o.opt, int(o.size)); err != nil {
			return nil, fmt.Errorf("size ring (opt %d) to %d: %w", o.opt, o.size, err)
		}
	}
	// Copy-mode TX sends at most this many frames per kick (default 32);
	// let one kick drain the whole ring. Older kernels lack the option.
	_ = unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, int(cfg.TxSize))

	off, err := mmapOffsets(fd)
	if err != nil {
		return nil, fmt.Errorf("get ring offsets: %w", err)
	}
	if err := s.mapRings(off); err != nil {
		return nil, err
	}

	sa := &unix.SockaddrXDP{Ifindex: uint32(s.ifindex), QueueID: uint32(cfg.Queue)}
	if shared {
		// A socket sharing a UMEM inherits copy/zero-copy and
		// need_wakeup from the UMEM's first socket.
		sa.Flags = unix.XDP_SHARED_UMEM
		sa.SharedUmemFD = uint32(u.regFD)
	} else {
		switch cfg.Mode {
		case BindCopy:
			sa.Flags |= unix.XDP_COPY
		case BindZeroCopy:
			sa.Flags |= unix.XDP_ZEROCOPY
		}
		if !cfg.NoNeedWakeup {
			sa.Flags |= unix.XDP_USE_NEED_WAKEUP
		}
		if cfg.MultiBuffer {
			sa.Flags |= unix.XDP_USE_SG
		}
	}
	if err := bindRetrying(fd, sa, cfg.BusyWait); err != nil {
		switch {
		case cfg.MultiBuffer && !shared && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)):
			return nil, fmt.Errorf("bind %s queue %d: %w: %w", cfg.Interface, cfg.Queue, ErrMultiBuffer, err)
		case cfg.Mode == BindZeroCopy && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)):
			return nil, fmt.Errorf("bind %s queue %d: %w: %w", cfg.Interface, cfg.Queue, ErrZeroCopy, err)
		case errors.Is(err, unix.EBUSY):
			return nil, fmt.Errorf("bind %s queue %d: %w (another AF_XDP socket has held the queue for %v)", cfg.Interface, cfg.Queue, err, max(cfg.BusyWait, 0))
		case errors.Is(err, unix.EPERM):
			return nil, fmt.Errorf("bind %s queue %d: %w: %w", cfg.Interface, cfg.Queue, ErrPermission, err)
		}
		return nil, fmt.Errorf("bind %s queue %d: %w", cfg.Interface, cfg.Queue, err)
	}
	opts, err := unix.GetsockoptInt(fd, unix.SOL_XDP, unix.XDP_OPTIONS)
	if err != nil {
		return nil, fmt.Errorf("get xdp options: %w", err)
	}
	s.zeroCopy = opts&unix.XDP_OPTIONS_ZEROCOPY != 0
	s.needWakeup = !cfg.NoNeedWakeup

	// Take this socket's share of the frames and prime the fill ring.
	all := cfg.RxFrames + cfg.TxFrames
	s.rxFree = make([]uint64, 0, all)
	s.txFree = make([]uint64, 0, all)
	for i := uint32(0); i < all; i++ {
		a := uint64(u.nextFrame+i) * uint64(u.cfg.FrameSize)
		if i < cfg.RxFrames {
			s.rxFree = append(s.rxFree, a)
		} else {
			s.txFree = append(s.txFree, a)
		}
	}
	u.nextFrame += all
	if !shared {
		u.regFD = fd
	}
	u.sockets++
	openSockets.Add(1)
	s.Refill()
	return s, nil
}

// bindRetrying binds fd, retrying for up to wait while the queue is busy:
// the kernel releases a closed socket's queue asynchronously (its buffer
// pool is freed from a work queue), so a bind right after the previous
// owner's close or exit can fail with EBUSY for a few milliseconds.
func bindRetrying(fd int, sa *unix.SockaddrXDP, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := 100 * time.Microsecond
	for {
		err := unix.Bind(fd, sa)
		if !errors.Is(err, unix.EBUSY) || !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

func (s *Socket) mapRings(off unix.XDPMmapOffsets) error {
	m := func(pgoff int64, ro unix.XDPRingOffset, n uint32, elem uint64) ([]byte, ring.Offsets, error) {
		mem, err := unix.Mmap(s.fd, pgoff, int(ro.Desc+uint64(n)*elem), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return nil, ring.Offsets{}, fmt.Errorf("map ring at %#x: %w", pgoff, err)
		}
		s.maps = append(s.maps, mem)
		return mem, ring.Offsets{Producer: ro.Producer, Consumer: ro.Consumer, Desc: ro.Desc, Flags: ro.Flags}, nil
	}
	var err error
	mem, ro, err := m(unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, s.cfg.FillSize, 8)
	if err != nil {
		return err
	}
	if s.fill, err = ring.MapProducer[uint64](mem, ro, s.cfg.FillSize); err != nil {
		return fmt.Errorf("fill ring: %w", err)
	}
	if mem, ro, err = m(unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, s.cfg.CompletionSize, 8); err != nil {
		return err
	}
	if s.comp, err = ring.MapConsumer[uint64](mem, ro, s.cfg.CompletionSize); err != nil {
		return fmt.Errorf("completion ring: %w", err)
	}
	if mem, ro, err = m(unix.XDP_PGOFF_RX_RING, off.Rx, s.cfg.RxSize, descSize()); err != nil {
		return err
	}
	if s.rx, err = ring.MapConsumer[Desc](mem, ro, s.cfg.RxSize); err != nil {
		return fmt.Errorf("rx ring: %w", err)
	}
	if mem, ro, err = m(unix.XDP_PGOFF_TX_RING, off.Tx, s.cfg.TxSize, descSize()); err != nil {
		return err
	}
	if s.tx, err = ring.MapProducer[Desc](mem, ro, s.cfg.TxSize); err != nil {
		return fmt.Errorf("tx ring: %w", err)
	}
	return nil
}

func (s *Socket) release() error {
	var errs []error
	for _, m := range s.maps {
		errs = append(errs, unix.Munmap(m))
	}
	s.maps = nil
	if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
		s.fd = -1
	}
	if s.efd >= 0 {
		errs = append(errs, unix.Close(s.efd))
		s.efd = -1
	}
	return errors.Join(errs...)
}

// Close unbinds the socket and unmaps its rings. Its frames stay assigned
// to it: the UMEM does not reuse them.
func (s *Socket) Close() error {
	if s.fd < 0 {
		return nil
	}
	s.umem.sockets--
	openSockets.Add(-1)
	if s.umem.regFD == s.fd {
		// The kernel keeps the UMEM alive for the sockets sharing it,
		// but new ones can no longer name it.
		s.umem.regFD = -2
	}
	if err := s.release(); err != nil {
		return fmt.Errorf("close xsk: %w", err)
	}
	return nil
}

// FD returns the socket's file descriptor, for the XSKMAP and for poll.
func (s *Socket) FD() int { return s.fd }

// Queue returns the queue the socket is bound to.
func (s *Socket) Queue() int { return s.cfg.Queue }

// Ifindex returns the index of the interface the socket is bound to.
func (s *Socket) Ifindex() int { return s.ifindex }

// ZeroCopy reports whether the kernel bound the socket in zero-copy mode.
func (s *Socket) ZeroCopy() bool { return s.zeroCopy }

// UMEM returns the UMEM the socket uses.
func (s *Socket) UMEM() *UMEM { return s.umem }

// Receive takes up to len(descs) received packets off the RX ring and
// returns how many. The caller owns their frames (read them with
// UMEM.Data) until it hands them back with Recycle.
func (s *Socket) Receive(descs []Desc) int {
	idx, n := s.rx.Peek(uint32(len(descs)))
	if n == 0 {
		return 0
	}
	var bytes uint64
	for i := uint32(0); i < n; i++ {
		descs[i] = *s.rx.At(idx + i)
		bytes += uint64(descs[i].Len)
	}
	s.rx.Release(n)
	s.c.rxPackets.Add(uint64(n))
	s.c.rxBytes.Add(bytes)
	return int(n)
}

// RxBacklog returns how many received frames wait on the RX ring. It is
// an RX-side method.
func (s *Socket) RxBacklog() int { return int(s.rx.Backlog()) }

// Recycle returns received frames to the socket: straight onto the fill
// ring where it has room, else onto the free list.
func (s *Socket) Recycle(descs []Desc) {
	idx, n := s.fill.Reserve(uint32(len(descs)))
	for i := uint32(0); i < n; i++ {
		*s.fill.At(idx + i) = descs[i].Addr & s.frameMask
	}
	s.fill.Submit(n)
	for _, d := range descs[n:] {
		s.rxFree = append(s.rxFree, d.Addr&s.frameMask)
	}
}

// Refill moves idle receive frames onto the fill ring and returns how many
// it moved.
func (s *Socket) Refill() int {
	if len(s.rxFree) == 0 {
		if s.fill.Free(s.cfg.FillSize) == s.cfg.FillSize {
			s.c.fillEmpty.Add(1)
		}
		return 0
	}
	idx, n := s.fill.Reserve(uint32(len(s.rxFree)))
	for i := uint32(0); i < n; i++ {
		*s.fill.At(idx + i) = s.rxFree[len(s.rxFree)-1-int(i)]
	}
	s.fill.Submit(n)
	s.rxFree = s.rxFree[:len(s.rxFree)-int(n)]
	return int(n)
}

// Alloc takes a free frame for transmitting and returns its UMEM address,
// or false if none is free (call Complete to reap sent frames). Write the
// packet into UMEM.Frame(addr) and pass it to Transmit.
func (s *Socket) Alloc() (uint64, bool) {
	if len(s.txFree) == 0 {
		return 0, false
	}
	a := s.txFree[len(s.txFree)-1]
	s.txFree = s.txFree[:len(s.txFree)-1]
	return a, true
}

// Free returns a frame taken with Alloc that will not be transmitted.
func (s *Socket) Free(addr uint64) { s.txFree = append(s.txFree, addr&s.frameMask) }

// Transmit is Enqueue followed by Kick.
func (s *Socket) Transmit(descs []Desc) (int, error) {
	n := s.Enqueue(descs)
	if n == 0 {
		return 0, nil
	}
	return n, s.Kick()
}

// Enqueue puts packets on the TX ring without waking the kernel and
// returns how many it queued; the rest (TX ring full) still belong to the
// caller. Queued frames come back to the TX pool through Complete. Kick
// may then be called without holding whatever serializes Enqueue.
func (s *Socket) Enqueue(descs []Desc) int {
	idx, n := s.tx.Reserve(uint32(len(descs)))
	var bytes uint64
	for i := uint32(0); i < n; i++ {
		*s.tx.At(idx + i) = descs[i]
		bytes += uint64(descs[i].Len)
	}
	s.tx.Submit(n)
	if int(n) < len(descs) {
		s.c.txFull.Add(1)
	}
	s.c.txPackets.Add(uint64(n))
	s.c.txBytes.Add(bytes)
	return int(n)
}

// TxRoom reports how many descriptors the TX ring has room for, up to
// want (call it from the goroutine that enqueues).
func (s *Socket) TxRoom(want int) int { return int(s.tx.Free(uint32(want))) }

// NeedsKick reports whether the kernel must be woken to process the TX
// ring.
func (s *Socket) NeedsKick() bool {
	return !s.needWakeup || s.tx.Flags()&unix.XDP_RING_NEED_WAKEUP != 0
}

// Kick wakes the kernel to send what the TX ring holds, if it needs
// waking. It is safe to call concurrently with the other methods. Transient conditions (EAGAIN, EBUSY, ENOBUFS) are not errors:
// the frames stay queued for the next kick.
func (s *Socket) Kick() error {
	if !s.NeedsKick() {
		return nil
	}
	for try := 0; try < 4; try++ {
		s.c.kicks.Add(1)
		_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EAGAIN, unix.EBUSY, unix.ENOBUFS:
			// Copy mode sends a budget per call and says EAGAIN when
			// more is left.
			s.c.kickRetries.Add(1)
			continue
		case unix.ENETDOWN:
			return nil
		default:
			return fmt.Errorf("kick tx: %w", errno)
		}
	}
	return nil
}

// Complete reaps the completion ring, returning sent frames to the TX
// pool, and returns how many it reaped.
func (s *Socket) Complete() int {
	idx, n := s.comp.Peek(s.cfg.CompletionSize)
	for i := uint32(0); i < n; i++ {
		s.txFree = append(s.txFree, *s.comp.At(idx + i)&s.frameMask)
	}
	s.comp.Release(n)
	return int(n)
}

// CompleteToFill reaps the completion ring straight into the fill ring
// (the rest into the RX pool) and returns how many it reaped. It is for
// forwarders that transmit received frames in place and drive both sides
// from one goroutine: the frames go back to receiving.
func (s *Socket) CompleteToFill() int {
	idx, n := s.comp.Peek(s.cfg.CompletionSize)
	fi, m := s.fill.Reserve(n)
	for i := uint32(0); i < n; i++ {
		a := *s.comp.At(idx + i) & s.frameMask
		if i < m {
			*s.fill.At(fi + i) = a
		} else {
			s.rxFree = append(s.rxFree, a)
		}
	}
	s.fill.Submit(m)
	s.comp.Release(n)
	return int(n)
}

// TxQueued returns how many descriptors sit on the TX ring not yet taken
// by the kernel: non-zero after a kick that hit EAGAIN means another kick
// is due. Safe from any goroutine.
func (s *Socket) TxQueued() int { return int(s.tx.Queued()) }

// WakeupRx wakes the kernel to process the fill ring if it asked for it
// (zero-copy drivers do when the fill ring ran dry).
func (s *Socket) WakeupRx() error {
	if !s.needWakeup || s.fill.Flags()&unix.XDP_RING_NEED_WAKEUP == 0 {
		return nil
	}
	_, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 && errno != unix.EAGAIN && errno != unix.EBUSY {
		return fmt.Errorf("wake rx: %w", errno)
	}
	return nil
}

// Wait blocks until the RX ring may have packets, Interrupt is called, or
// timeout passes (a negative timeout waits without limit), first waking
// the kernel to process the fill ring if it asked for that. It is an RX-side
// method. A spurious return is harmless: callers poll the ring after it.
func (s *Socket) Wait(timeout time.Duration) error {
	if err := s.WakeupRx(); err != nil {
		return err
	}
	if s.rx.Available() > 0 {
		return nil
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	s.pollFDs[0].Revents, s.pollFDs[1].Revents = 0, 0
	if _, err := unix.Poll(s.pollFDs[:], ms); err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("poll xsk: %w", err)
	}
	if s.pollFDs[1].Revents&unix.POLLIN != 0 {
		var buf [8]byte
		unix.Read(s.efd, buf[:])
	}
	return nil
}

// Interrupt wakes a Wait in progress, or makes the next one return at
// once. It is safe from any goroutine.
func (s *Socket) Interrupt() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(s.efd, one[:])
}

// Stats returns the socket's counters. It may be called from any
// goroutine.
func (s *Socket) Stats() (Stats, error) {
	k, err := statistics(s.fd)
	if err != nil {
		return Stats{}, fmt.Errorf("xdp statistics: %w", err)
	}
	return Stats{
		RxDropped: k.Rx_dropped, RxInvalid: k.Rx_invalid_descs, TxInvalid: k.Tx_invalid_descs,
		RxRingFull: k.Rx_ring_full, FillRingEmpty: k.Rx_fill_ring_empty_descs, TxRingEmpty: k.Tx_ring_empty_descs,
		RxPackets: s.c.rxPackets.Load(), RxBytes: s.c.rxBytes.Load(),
		TxPackets: s.c.txPackets.Load(), TxBytes: s.c.txBytes.Load(),
		Kicks: s.c.kicks.Load(), KickRetries: s.c.kickRetries.Load(),
		FillStarved: s.c.fillEmpty.Load(), TxRingFull: s.c.txFull.Load(),
	}, nil
}
