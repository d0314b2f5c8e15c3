package qp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Access is the set of rights a memory region grants.
type Access uint8

// Access rights. RemoteWrite and RemoteAtomic need LocalWrite, as in verbs.
const (
	// LocalWrite lets this end's receives, Read responses and atomic
	// results land in the region.
	LocalWrite Access = 1 << iota
	// RemoteWrite lets the peer's RDMA Writes land in the region.
	RemoteWrite
	// RemoteRead lets the peer read the region with RDMA Read.
	RemoteRead
	// RemoteAtomic lets the peer run atomics on 8-byte words of the
	// region.
	RemoteAtomic
)

const remoteRights = RemoteWrite | RemoteRead | RemoteAtomic

// Device is the verbs context: it owns the registration table that maps
// keys to memory regions, and creates protection domains and completion
// queues. A Device is not bound to one transport; each queue pair gets
// its own connection. Safe for concurrent use.
type Device struct {
	mu   sync.Mutex
	mrs  atomic.Pointer[[]*MR] // by key index; copy on write
	free []uint32              // free key indices
	gen  uint8                 // key byte of the next registration
	qpn  atomic.Uint32
	// atomicMu makes every atomic on this device's memory one step, so
	// atomics from different queue pairs on the same word do not mix.
	atomicMu sync.Mutex
}

// NewDevice returns a verbs context.
func NewDevice() *Device {
	d := &Device{}
	mrs := make([]*MR, 1) // index 0 is never a key: STag 0 stays invalid
	d.mrs.Store(&mrs)
	return d
}

// PD is a protection domain: a queue pair can reach, locally or remotely,
// only the memory registered in its own domain.
type PD struct {
	dev *Device
	n   atomic.Int32 // registered regions and queue pairs
}

// AllocPD returns a new protection domain.
func (d *Device) AllocPD() *PD { return &PD{dev: d} }

// MR is a registered memory region. Its key works as both the local key
// (in SGEs) and the remote key (STag, in RDMA Writes, Reads and atomics)
// a peer is told. Offsets are zero-based: a remote offset of 0 is Buf[0].
type MR struct {
	buf    []byte
	access Access
	pd     *PD
	key    uint32

	// mu fences access: the engine holds it for reading while it copies
	// to or from buf; Dereg takes it for writing, so when Dereg returns
	// no access is in flight and none can start.
	mu sync.RWMutex
	// revoked holds mrDereg and mrInvalidated, set with mu held for
	// writing: under mu's read lock it is steady for an access, and
	// probe reads it without the lock for a check that touches no
	// memory.
	revoked atomic.Uint32
}

// Bits of MR.revoked.
const (
	// mrDereg: Dereg ran; no access.
	mrDereg = 1 << iota
	// mrInvalidated: a Send with Invalidate named the key; remote access
	// ends.
	mrInvalidated
)

// RegMR registers buf with the given rights. buf is used in place: the
// caller keeps it and must not move or reuse it until Dereg.
func (pd *PD) RegMR(buf []byte, access Access) (*MR, error) {
	if access&^(LocalWrite|remoteRights) != 0 {
		return nil, fmt.Errorf("%w: access %#x", ErrInvalidArg, access)
	}
	if access&(RemoteWrite|RemoteAtomic) != 0 && access&LocalWrite == 0 {
		return nil, fmt.Errorf("%w: remote write and atomic access need LocalWrite", ErrInvalidArg)
	}
	if uint64(len(buf)) > 1<<32 {
		return nil, fmt.Errorf("%w: region of %d bytes, at most 4 GiB", ErrInvalidArg, len(buf))
	}
	d := pd.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	old := *d.mrs.Load()
	var idx uint32
	if n := len(d.free); n > 0 {
		idx, d.free = d.free[n-1], d.free[:n-1]
	} else {
		if len(old) >= 1<<24 {
			return nil, fmt.Errorf("%w: 2^24 regions registered", ErrInvalidArg)
		}
		idx = uint32(len(old))
	}
	d.gen++
	mr := &MR{buf: buf, access: access, pd: pd, key: idx<<8 | uint32(d.gen)}
	mrs := make([]*MR, max(len(old), int(idx)+1))
	copy(mrs, old)
	mrs[idx] = mr
	d.mrs.Store(&mrs)
	pd.n.Add(1)
	return mr, nil
}

// Key is the region's local and remote key.
func (mr *MR) Key() uint32 { return mr.key }

// Buf is the registered memory.
func (mr *MR) Buf() []byte { return mr.buf }

// Dereg deregisters the region. It waits for accesses in flight to end;
// afterwards no local or remote request reaches the memory, and requests
// naming the key fail (local ones with a protection status, remote ones
// with a Terminate).
func (mr *MR) Dereg() error {
	mr.mu.Lock()
	f := mr.revoked.Load()
	if f&mrDereg != 0 {
		mr.mu.Unlock()
		return fmt.Errorf("%w: region already deregistered", ErrInvalidArg)
	}
	mr.revoked.Store(f | mrDereg)
	mr.mu.Unlock()
	d := mr.pd.dev
	d.mu.Lock()
	old := *d.mrs.Load()
	mrs := append([]*MR(nil), old...)
	mrs[mr.key>>8] = nil
	d.mrs.Store(&mrs)
	d.free = append(d.free, mr.key>>8)
	d.mu.Unlock()
	mr.pd.n.Add(-1)
	return nil
}

// lookup finds the region key names, checks that it belongs to pd,
// grants need and holds [off, off+n), and returns it read-locked: the
// caller must call mr.mu.RUnlock. On failure it returns the Terminate
// code that names the violation.
func (d *Device) lookup(key uint32, pd *PD, need Access, off uint64, n uint64) (*MR, termCode, bool) {
	mr := d.find(key)
	if mr == nil {
		return nil, termInvalidSTag, false
	}
	mr.mu.RLock()
	if c, ok := mr.check(pd, need, off, n); !ok {
		mr.mu.RUnlock()
		return nil, c, false
	}
	return mr, 0, true
}

// probe is lookup's check without taking the region's lock, for checks
// that touch no memory (a request's keys when it is posted): a region
// deregistered right after still passes, and the access that follows,
// through lookup, fails instead.
func (d *Device) probe(key uint32, pd *PD, need Access, off uint64, n uint64) (termCode, bool) {
	mr := d.find(key)
	if mr == nil {
		return termInvalidSTag, false
	}
	return mr.check(pd, need, off, n)
}

// find returns the region registered under key, nil if none is.
func (d *Device) find(key uint32) *MR {
	mrs := *d.mrs.Load()
	idx := key >> 8
	if idx == 0 || idx >= uint32(len(mrs)) {
		return nil
	}
	if mr := mrs[idx]; mr != nil && mr.key == key {
		return mr
	}
	return nil
}

// check is the check of lookup and probe; on failure it returns the
// Terminate code that names the violation.
func (mr *MR) check(pd *PD, need Access, off uint64, n uint64) (termCode, bool) {
	f := mr.revoked.Load()
	switch {
	case f&mrDereg != 0 || (need&remoteRights != 0 && f&mrInvalidated != 0):
		return termInvalidSTag, false
	case mr.pd != pd:
		return termPD, false
	case mr.access&need != need:
		return termAccess, false
	case off > uint64(len(mr.buf)) || n > uint64(len(mr.buf))-off:
		return termBounds, false
	}
	return 0, true
}

// Status is a work completion's status.
type Status uint8

// Completion statuses, after verbs' ibv_wc_status.
const (
	StatusSuccess Status = iota
	// StatusLocalLength: a received message was longer than the receive
	// request's buffers.
	StatusLocalLength
	// StatusLocalProtection: a local key failed when the request ran (the
	// region was deregistered after posting).
	StatusLocalProtection
	// StatusFlush: the queue pair went to the error state before the
	// request completed.
	StatusFlush
	// StatusRemoteAccess: the peer refused the request's remote access
	// (bad remote key, bounds or rights) with a Terminate.
	StatusRemoteAccess
	// StatusRemoteOp: the peer ended the connection with a Terminate for
	// another reason while the request was outstanding.
	StatusRemoteOp
	// StatusFatal: the connection failed (closed, a transport error, a CQ
	// overflow) while the request was outstanding.
	StatusFatal
)

var statusNames = [...]string{"success", "local length error", "local protection error",
	"flushed", "remote access error", "remote operation error", "fatal error"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// WCOpcode says what a completion completes.
type WCOpcode uint8

// Completion opcodes.
const (
	WCSend WCOpcode = iota
	WCWrite
	WCRead
	WCFetchAdd
	WCCmpSwap
	// WCRecv: a Send (with or without Invalidate) landed in a receive.
	WCRecv
	// WCRecvWithImm: an RDMA Write with immediate finished; the receive
	// carries the immediate value and no data.
	WCRecvWithImm
)

// WCFlags qualify a completion.
type WCFlags uint8

// Completion flags.
const (
	// WCWithImm: Imm holds an immediate value.
	WCWithImm WCFlags = 1 << iota
	// WCWithInv: the Send invalidated InvKey, one of this end's regions.
	WCWithInv
)

// WC is a work completion.
type WC struct {
	// ID is the work request's ID.
	ID     uint64
	Status Status
	Op     WCOpcode
	Flags  WCFlags
	// Len is the number of bytes received (receive completions) or read.
	Len uint32
	// Imm is the immediate value (Flags has WCWithImm).
	Imm uint32
	// InvKey is the key a Send with Invalidate invalidated.
	InvKey uint32
	// QPN is the queue pair's number.
	QPN uint32
}

// CQ is a completion queue: a fixed ring of completions that queue pairs
// fill and the application drains with Poll. Safe for concurrent use.
type CQ struct {
	mu       sync.Mutex
	ring     []WC
	head, n  int
	overflow bool
	notify   chan struct{}
	// wakes counts the notifications notify took, each of which may have
	// readied a goroutine waiting on it.
	wakes atomic.Uint64
}

// CreateCQ returns a completion queue that holds depth completions.
// Posting more signaled work than the queue can hold before polling
// overflows it: see ErrCQOverflow.
func (d *Device) CreateCQ(depth int) (*CQ, error) {
	if depth < 1 || depth > 1<<20 {
		return nil, fmt.Errorf("%w: CQ depth %d, want 1..2^20", ErrInvalidArg, depth)
	}
	return &CQ{ring: make([]WC, depth), notify: make(chan struct{}, 1)}, nil
}

// push adds a completion; false means the CQ overflowed.
func (cq *CQ) push(wc WC) bool {
	cq.mu.Lock()
	if cq.n == len(cq.ring) {
		cq.overflow = true
		cq.mu.Unlock()
		cq.wake()
		return false
	}
	cq.ring[(cq.head+cq.n)%len(cq.ring)] = wc
	cq.n++
	cq.mu.Unlock()
	cq.wake()
	return true
}

func (cq *CQ) wake() {
	select {
	case cq.notify <- struct{}{}:
		cq.wakes.Add(1)
	default:
	}
}

// Poll moves up to len(out) completions, oldest first, into out and
// returns how many. It never blocks and never allocates.
func (cq *CQ) Poll(out []WC) int {
	cq.mu.Lock()
	k := min(len(out), cq.n)
	for i := 0; i < k; i++ {
		out[i] = cq.ring[cq.head]
		cq.head++
		if cq.head == len(cq.ring) {
			cq.head = 0
		}
	}
	cq.n -= k
	cq.mu.Unlock()
	return k
}

// Err returns ErrCQOverflow once the queue has overflowed.
func (cq *CQ) Err() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.overflow {
		return ErrCQOverflow
	}
	return nil
}

// Notify receives a value after completions are added (one value for any
// number), for callers that poll and block in a select of their own.
func (cq *CQ) Notify() <-chan struct{} { return cq.notify }

// Wait blocks until the queue holds a completion, it has overflowed, or
// ctx ends, and returns nil, ErrCQOverflow or ctx's error.
func (cq *CQ) Wait(ctx context.Context) error {
	for {
		cq.mu.Lock()
		n, of := cq.n, cq.overflow
		cq.mu.Unlock()
		switch {
		case n > 0:
			return nil
		case of:
			return ErrCQOverflow
		}
		select {
		case <-cq.notify:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// SGE is a scatter-gather entry: Len bytes at Offset in the region whose
// key is Key.
type SGE struct {
	Offset uint64
	Len    uint32
	Key    uint32
}

// recvQueue is a fixed ring of receive requests, a queue pair's own or a
// shared one.
type recvQueue struct {
	mu     sync.Mutex
	slots  []recvSlot
	head   int
	n      int
	maxSGE int
	pd     *PD
}

type recvSlot struct {
	id  uint64
	sgl []SGE // cap maxSGE
}

func newRecvQueue(pd *PD, depth, maxSGE int) *recvQueue {
	q := &recvQueue{slots: make([]recvSlot, depth), maxSGE: maxSGE, pd: pd}
	for i := range q.slots {
		q.slots[i].sgl = make([]SGE, 0, maxSGE)
	}
	return q
}

// RecvWR is a receive work request: where the next incoming Send lands.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// check validates wr's local keys: each SGE must name a region of the
// queue's domain with LocalWrite that holds it.
func (q *recvQueue) check(wr *RecvWR) error {
	if len(wr.SGL) > q.maxSGE {
		return fmt.Errorf("%w: %d SGEs, at most %d", ErrTooManySGE, len(wr.SGL), q.maxSGE)
	}
	for _, s := range wr.SGL {
		if _, ok := q.pd.dev.probe(s.Key, q.pd, LocalWrite, s.Offset, uint64(s.Len)); !ok {
			return fmt.Errorf("%w: key %#x [%d, +%d)", ErrLocalKey, s.Key, s.Offset, s.Len)
		}
	}
	return nil
}

// post appends wrs and returns how many it took.
func (q *recvQueue) post(wrs []RecvWR) (int, error) {
	for i := range wrs {
		if err := q.check(&wrs[i]); err != nil {
			return i, err
		}
		q.mu.Lock()
		if q.n == len(q.slots) {
			q.mu.Unlock()
			return i, ErrQueueFull
		}
		s := &q.slots[(q.head+q.n)%len(q.slots)]
		s.id = wrs[i].ID
		s.sgl = append(s.sgl[:0], wrs[i].SGL...)
		q.n++
		q.mu.Unlock()
	}
	return len(wrs), nil
}

// take removes the oldest receive into out.
func (q *recvQueue) take(out *recvSlot) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return false
	}
	s := &q.slots[q.head]
	out.id = s.id
	out.sgl = append(out.sgl[:0], s.sgl...)
	q.head = (q.head + 1) % len(q.slots)
	q.n--
	return true
}

// SRQ is a shared receive queue: queue pairs created with it take their
// receives from it, in posting order, whichever Send arrives first.
type SRQ struct {
	q *recvQueue
}

// CreateSRQ returns a shared receive queue of depth requests with up to
// maxSGE entries each.
func (pd *PD) CreateSRQ(depth, maxSGE int) (*SRQ, error) {
	if depth < 1 || depth > 1<<16 || maxSGE < 0 || maxSGE > 64 {
		return nil, fmt.Errorf("%w: SRQ depth %d (want 1..65536), max SGE %d (want 0..64)", ErrInvalidArg, depth, maxSGE)
	}
	return &SRQ{q: newRecvQueue(pd, depth, maxSGE)}, nil
}

// PostRecv posts receive requests to the shared queue. It returns how
// many it posted; when that is fewer than len(wrs), the error says why
// wrs[n] was refused.
func (s *SRQ) PostRecv(wrs []RecvWR) (int, error) { return s.q.post(wrs) }

// Len is the number of posted, unconsumed receives.
func (s *SRQ) Len() int {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return s.q.n
}
