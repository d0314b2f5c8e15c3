package qp

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ustack-dev/ustack/capability"
)

// State is a queue pair's state, as in verbs.
type State uint8

// Queue pair states. A new queue pair is in Reset; Modify(StateInit)
// allows posting receives; Connect or ConnRequest.Accept take it through
// RTR to RTS, where sends may be posted; any failure moves it to Error,
// which flushes every outstanding request; Modify(StateReset) from Error
// makes it reusable.
const (
	StateReset State = iota
	StateInit
	StateRTR
	StateRTS
	StateError
)

var stateNames = [...]string{"reset", "init", "rtr", "rts", "error"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// WROpcode is a send work request's operation.
type WROpcode uint8

// Send work request operations.
const (
	// WRSend sends the SGL (or inline data) into the peer's next receive.
	WRSend WROpcode = iota
	// WRSendWithInv is WRSend that also invalidates the peer's region
	// InvKey: its remote access ends.
	WRSendWithInv
	// WRWrite writes the SGL to the peer's region RemoteKey at
	// RemoteOffset.
	WRWrite
	// WRWriteWithImm is WRWrite followed by an RFC 7306 Immediate Data
	// message carrying Imm, which consumes one of the peer's receives and
	// completes it with WCRecvWithImm once the data is in place.
	WRWriteWithImm
	// WRRead reads the peer's region RemoteKey from RemoteOffset into the
	// SGL: one RDMA Read Request per SGE, for consecutive remote ranges.
	WRRead
	// WRFetchAdd adds CompareAdd to the 8-byte word at RemoteOffset (8-byte
	// aligned) and returns the old value into the single 8-byte SGE.
	WRFetchAdd
	// WRCmpSwap replaces the word at RemoteOffset with Swap if it equals
	// CompareAdd, and returns the old value into the single 8-byte SGE.
	WRCmpSwap
	numWROps
)

// SendFlags modify a send work request.
type SendFlags uint8

// Send flags.
const (
	// Signaled asks for a completion on success. Errors always complete.
	Signaled SendFlags = 1 << iota
	// Fence holds the request until every earlier Read and atomic has
	// completed.
	Fence
	// Inline sends Inline's bytes, copied at posting, instead of an SGL:
	// no registration needed, and the buffer is free when PostSend
	// returns. Send and Write only.
	Inline
	// Solicited sets the solicited-event bit of a Send.
	Solicited
)

// SendWR is a send work request.
type SendWR struct {
	ID    uint64
	Op    WROpcode
	Flags SendFlags
	// SGL is the local data: its source (Send, Write) or sink (Read,
	// atomics). PostSend copies it; the slice is free when it returns.
	SGL []SGE
	// Inline is the data of an Inline request.
	Inline []byte
	// RemoteKey and RemoteOffset name the peer's memory (Write, Read,
	// atomics).
	RemoteKey    uint32
	RemoteOffset uint64
	// Imm is WRWriteWithImm's immediate value.
	Imm uint32
	// InvKey is the peer key WRSendWithInv invalidates.
	InvKey uint32
	// CompareAdd is WRFetchAdd's addend and WRCmpSwap's compare value;
	// Swap is WRCmpSwap's new value.
	CompareAdd, Swap uint64
}

// QPConfig configures a queue pair.
type QPConfig struct {
	// SendCQ receives send completions, RecvCQ receive completions; they
	// may be the same queue. Both are required.
	SendCQ, RecvCQ *CQ
	// SRQ, if set, supplies the receives, and PostRecv is refused.
	SRQ *SRQ
	// SendDepth and RecvDepth are the queue sizes (default 128 each).
	SendDepth, RecvDepth int
	// MaxSGE is the most SGEs per request (default 4).
	MaxSGE int
	// MaxInline is the most bytes an Inline request carries (default 128).
	MaxInline int
	// MaxFPDU is the largest FPDU sent (default 1448: the TCP MSS of a
	// 1500-byte IPv4 path with timestamps, so an FPDU fits a segment).
	// Between 64 and MaxFPDU; a multiple of 4 keeps full FPDUs unpadded.
	MaxFPDU int
	// ORD is the most Reads and atomics outstanding at once (default 16),
	// counting one per Read SGE; IRD the most this end answers at once.
	ORD, IRD int
	// ReaderGoroutine has a goroutine of the queue pair's read the
	// connection even when the transport can run the engine itself (a
	// ustack connection, whose worker then calls the engine right after
	// TCP processing, with no goroutine hand-off per message).
	ReaderGoroutine bool
	// CopyTransmit has the queue pair's transmit buffer copied into the
	// connection's send buffer, as over any net.Conn, even where the
	// connection can read it in place (ustack's: a lent write, see
	// capability.LendWriter). For comparison.
	CopyTransmit bool
	// OnInput, if set, is called on the goroutine that runs the engine
	// (ustack's worker, or the reader goroutine) each time it has taken
	// in data from the peer, after placing it and writing its
	// completions: it lets an application react to a Write landing or a
	// completion arriving where it happens, with no goroutine hand-off,
	// as an RDMA program polling on a core of its own does. It must not
	// block: it may read registered memory, Poll CQs and post, and a
	// PostSend or PostRecv it makes never waits (what the transport does
	// not take at once is sent by the queue pair's transmit goroutine).
	// It must not Close or Modify the queue pair.
	OnInput func()
}

// DefaultQPConfig returns the defaults described on QPConfig, for the
// given completion queues.
func DefaultQPConfig(send, recv *CQ) QPConfig {
	return QPConfig{SendCQ: send, RecvCQ: recv, SendDepth: 128, RecvDepth: 128, MaxSGE: 4,
		MaxInline: 128, MaxFPDU: 1448, ORD: 16, IRD: 16}
}

func (c *QPConfig) setDefaults() {
	d := DefaultQPConfig(nil, nil)
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&c.SendDepth, d.SendDepth)
	set(&c.RecvDepth, d.RecvDepth)
	set(&c.MaxSGE, d.MaxSGE)
	set(&c.MaxInline, d.MaxInline)
	set(&c.MaxFPDU, d.MaxFPDU)
	set(&c.ORD, d.ORD)
	set(&c.IRD, d.IRD)
}

func (c *QPConfig) validate() error {
	switch {
	case c.SendCQ == nil || c.RecvCQ == nil:
		return fmt.Errorf("%w: SendCQ and RecvCQ are required", ErrInvalidArg)
	case c.SendDepth < 1 || c.SendDepth > 1<<16 || c.RecvDepth < 1 || c.RecvDepth > 1<<16:
		return fmt.Errorf("%w: queue depths %d/%d, want 1..65536", ErrInvalidArg, c.SendDepth, c.RecvDepth)
	case c.MaxSGE < 1 || c.MaxSGE > 64:
		return fmt.Errorf("%w: MaxSGE %d, want 1..64", ErrInvalidArg, c.MaxSGE)
	case c.MaxInline < 0 || c.MaxInline > 4096:
		return fmt.Errorf("%w: MaxInline %d, want 0..4096", ErrInvalidArg, c.MaxInline)
	case c.MaxFPDU < 64 || c.MaxFPDU > MaxFPDU:
		return fmt.Errorf("%w: MaxFPDU %d, want 64..%d", ErrInvalidArg, c.MaxFPDU, MaxFPDU)
	case c.ORD < 1 || c.ORD > 1024 || c.IRD < 1 || c.IRD > 1024:
		return fmt.Errorf("%w: ORD %d, IRD %d, want 1..1024", ErrInvalidArg, c.ORD, c.IRD)
	}
	return nil
}

// sqSlot is a send request while the queue pair owns it.
type sqSlot struct {
	wr     SendWR // SGL and Inline point into sgl and inline below
	sgl    []SGE
	inline []byte
	seq    uint64
	done   bool
	status Status
	len    uint32 // bytes read, for a Read's completion
}

// ordEntry is an outstanding Read Request (one per SGE) or atomic.
type ordEntry struct {
	seq    uint64 // the send request's sequence number
	atomic bool
	key    uint32 // Read: sink key; atomic: result key
	to     uint64 // Read: next sink offset; atomic: result offset
	left   uint32 // Read: bytes still to arrive
	last   bool   // Read: the request's last SGE
}

// response is work for the transmit goroutine: a Read Response, an
// Atomic Response or a Terminate.
type response struct {
	kind   uint8
	rr     readRequest
	id     uint32
	orig   uint64
	term   termCode
	cancel bool
}

const (
	respRead = iota
	respAtomic
	respTerminate
)

// QP is a reliable-connected queue pair over a byte stream. Post and poll
// from any goroutine. Once connected, a goroutine reads the stream and
// places data (input), and one transmits responses and requests held by
// fences; PostSend transmits on the caller's goroutine when nothing holds
// it back.
type QP struct {
	// Set by CreateQP and not written again, but rq, which a return to
	// StateReset (Modify, under mu, with no engine running) renews.
	dev    *Device
	pd     *PD
	num    uint32
	cfg    QPConfig
	rq     *recvQueue // own or the SRQ's
	srq    *SRQ
	kick   chan struct{} // wakes the transmit goroutine (txLoop)
	placed chan struct{} // QP.Placed
	wg     sync.WaitGroup

	// Set by start, under mu, before the goroutines that read them
	// without a lock (reader, transmit) start; cleared by a return to
	// StateReset.
	conn net.Conn
	// polled: the transport's worker feeds input (capability.WorkerPoller).
	polled bool

	// The work queues and the queue pair's state: under mu, taken by the
	// posting goroutines, the transmit goroutine and input.
	mu    sync.Mutex
	state State
	err   error
	sq    []sqSlot
	head  uint64 // oldest incomplete request
	sent  uint64 // next request to transmit
	// handed: Sends and Writes before it were handed to the transport
	// (they succeed even if a failure flushes the queue meanwhile).
	handed uint64
	tail   uint64 // next free slot
	ord    []ordEntry
	ordH   int
	ordN   int
	resp   []response
	respH  int
	respN  int

	// Flags read without a lock by any goroutine.
	//
	// errored is set under mu with state = StateError, for input to
	// check without taking mu.
	errored atomic.Bool
	// inHandler is set by input while OnInput runs: PostSend then never
	// waits.
	inHandler atomic.Bool

	// The transmit side: under txMu, taken by whichever goroutine
	// transmits (a poster, the transmit goroutine, or input sending a
	// response inline).
	txMu sync.Mutex
	// txb holds the transmit buffer, txbuf (txb.b), and counts its lends.
	txb *txBuf
	txn int // bytes framed in txbuf
	// txout: txbuf[:txout] is written out; txbuf[txout:txn] is not.
	txout int
	// txSealed: the FPDUs in txbuf[:txSealed] have their CRCs (txSeal).
	txSealed int
	// txLent is set once some of txbuf was lent to the connection
	// (lender), which then reads it in place until the bytes are
	// acknowledged: txbuf is then never rewritten, but swapped for a
	// free one (txRenew).
	txLent bool
	msnOut [numQN]uint32
	// fillMR is the region fill holds read-locked (fillUnlock).
	fillMR *MR
	// The connection's capabilities, asserted once by start.
	lender capability.LendWriter
	tryW   capability.TryWriter // conn's, if it has TryWrite
	raw    syscall.RawConn      // conn's, for tryWrite on a kernel socket
	// rawWrite is q.writeRaw, bound once (a closure per tryWrite would
	// allocate); tw is what it writes and how that went.
	rawWrite func(fd uintptr) bool
	tw       struct {
		b   []byte
		n   int
		err error
	}

	// txFree holds the transmit buffers the connection has let go of:
	// under txFreeMu, taken by whichever goroutine the connection
	// releases a lend on, and by the transmit side.
	txFreeMu sync.Mutex
	txFree   []*txBuf

	// The receive side: only input touches these, on the reader
	// goroutine (readLoop) or, when polled, on the stack's worker.
	stage  []byte
	stageN int
	rbuf   []byte // the reader goroutine's, made when it starts
	msnIn  [numQN]uint32
	inMsg  [numQN]bool
	moIn   [numQN]uint32
	cur    recvSlot
	failed bool
	// draining: input failed, and the rest of the stream is read and
	// discarded until the peer closes.
	draining bool
	// fed: input ran since afterInput last did.
	fed bool
	// respQueued: input queued a response since afterInput last sent
	// them (respondInline).
	respQueued bool
	// wakeMark is the CQs' wakes when this round of input began;
	// placedWoke is set if input's notification on placed was taken.
	// afterInput reports from both whether the round may have readied a
	// goroutine.
	wakeMark   uint64
	placedWoke bool
}

// txPayload is the payload the transmit buffer holds: a posted list of
// that much goes out with one system call, and the FPDUs' framing does
// not cut off a piece to write on its own.
const txPayload = 256 << 10

// txBufLen is the length of a transmit buffer that holds txPayload bytes
// of payload in FPDUs of at most maxFPDU bytes, with room for the short
// last FPDUs of a list's messages.
func txBufLen(maxFPDU int) int {
	return (txPayload/maxPayload(maxFPDU, untaggedHdrLen) + 8) * maxFPDU
}

// CreateQP returns a queue pair in the Reset state.
func (pd *PD) CreateQP(cfg QPConfig) (*QP, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.SRQ != nil && cfg.SRQ.q.pd != pd {
		return nil, fmt.Errorf("%w: SRQ of another protection domain", ErrInvalidArg)
	}
	q := &QP{dev: pd.dev, pd: pd, num: pd.dev.qpn.Add(1), cfg: cfg, srq: cfg.SRQ,
		sq: make([]sqSlot, cfg.SendDepth), ord: make([]ordEntry, cfg.ORD),
		resp: make([]response, cfg.IRD+1), kick: make(chan struct{}, 1), placed: make(chan struct{}, 1)}
	if cfg.SRQ != nil {
		q.rq = cfg.SRQ.q
	} else {
		q.rq = newRecvQueue(pd, cfg.RecvDepth, cfg.MaxSGE)
	}
	for i := range q.sq {
		q.sq[i].sgl = make([]SGE, 0, cfg.MaxSGE)
		q.sq[i].inline = make([]byte, 0, cfg.MaxInline)
	}
	q.cur.sgl = make([]SGE, 0, max(cfg.MaxSGE, q.rq.maxSGE))
	q.txb = q.newTxBuf()
	q.stage = make([]byte, MaxFPDU)
	pd.n.Add(1)
	return q, nil
}

// Num is the queue pair's number, reported in its completions.
func (q *QP) Num() uint32 { return q.num }

// Placed receives a value after the engine has taken in data from the
// peer (an RDMA Write or Read Response placed, a Send received), and when
// the queue pair fails. It is for applications that watch registered
// memory for a peer's Writes, as RDMA programs poll it: check the memory,
// and wait on Placed only when nothing is there yet. One value stands for
// any number of events.
func (q *QP) Placed() <-chan struct{} { return q.placed }

// State returns the current state.
func (q *QP) State() State {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state
}

// Err returns why the queue pair went to the error state, nil before.
func (q *QP) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// Modify moves the queue pair to state: Reset→Init, any→Error, and
// Error→Reset (after the connection's goroutines have ended). RTR and RTS
// are reached through Connect and ConnRequest.Accept.
func (q *QP) Modify(to State) error {
	q.mu.Lock()
	from := q.state
	switch {
	case to == StateError:
		q.mu.Unlock()
		q.fail(ErrClosed, 0)
		return nil
	case from == StateReset && to == StateInit:
		q.state = StateInit
		q.mu.Unlock()
		return nil
	case from == StateError && to == StateReset:
		q.mu.Unlock()
		q.wg.Wait()
		q.reset()
		return nil
	}
	q.mu.Unlock()
	return fmt.Errorf("%w: %v → %v", ErrState, from, to)
}

func (q *QP) reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.state, q.err = StateReset, nil
	q.errored.Store(false)
	q.head, q.sent, q.tail, q.handed = 0, 0, 0, 0
	q.ordH, q.ordN, q.respH, q.respN = 0, 0, 0, 0
	if q.txLent {
		q.txRenew()
	}
	q.txn, q.txout, q.txSealed, q.msnOut, q.conn, q.raw, q.lender, q.tryW = 0, 0, 0, [numQN]uint32{}, nil, nil, nil, nil
	q.stageN, q.msnIn, q.inMsg, q.moIn, q.failed = 0, [numQN]uint32{}, [numQN]bool{}, [numQN]uint32{}, false
	q.draining, q.polled, q.fed, q.respQueued = false, false, false, false
	if q.srq == nil {
		q.rq = newRecvQueue(q.pd, q.cfg.RecvDepth, q.cfg.MaxSGE)
	}
}

// Polled reports whether the transport runs the queue pair's engine
// itself, on ustack's worker, rather than a goroutine of the queue pair's
// reading the connection (see QPConfig.ReaderGoroutine). Valid once
// connected.
func (q *QP) Polled() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.polled
}

// Close moves the queue pair to Error (flushing what is outstanding),
// closes its connection and waits for its goroutines.
func (q *QP) Close() error {
	q.fail(ErrClosed, 0)
	q.wg.Wait()
	return nil
}

// PostRecv posts receive requests. It returns how many it posted; when
// that is fewer than len(wrs) the error says why wrs[n] was refused. In
// the Error state, requests complete at once with StatusFlush.
func (q *QP) PostRecv(wrs []RecvWR) (int, error) {
	if q.srq != nil {
		return 0, fmt.Errorf("%w: queue pair uses a shared receive queue", ErrState)
	}
	q.mu.Lock()
	st := q.state
	q.mu.Unlock()
	switch st {
	case StateReset:
		return 0, fmt.Errorf("%w: PostRecv in %v", ErrState, st)
	case StateError:
		for i := range wrs {
			if !q.cfg.RecvCQ.push(WC{ID: wrs[i].ID, Status: StatusFlush, Op: WCRecv, QPN: q.num}) {
				return i, ErrCQOverflow
			}
		}
		return len(wrs), nil
	}
	return q.rq.post(wrs)
}

// PostSend posts send requests, in order, and starts transmitting them.
// It returns how many it posted; when that is fewer than len(wrs) the
// error says why wrs[n] was refused, and nothing from wrs[n] on was
// posted. Posting errors are synchronous: the state (RTS needed), a full
// queue, too many SGEs, a bad local key or bounds, a malformed request.
// In the Error state, requests complete at once with StatusFlush.
func (q *QP) PostSend(wrs []SendWR) (int, error) {
	if len(wrs) == 1 && q.inHandler.Load() && fastWR(&wrs[0]) {
		if err := q.checkSend(&wrs[0]); err != nil {
			return 0, err
		}
		if q.postFast(&wrs[0]) {
			return 1, nil
		}
	}
	posted := 0
	var err error
	for i := range wrs {
		wr := &wrs[i]
		if err = q.checkSend(wr); err != nil {
			break
		}
		q.mu.Lock()
		if q.state == StateError {
			q.mu.Unlock()
			if !q.cfg.SendCQ.push(WC{ID: wr.ID, Status: StatusFlush, Op: wcOp(wr.Op), QPN: q.num}) {
				err = ErrCQOverflow
				break
			}
			posted++
			continue
		}
		if q.state != StateRTS {
			st := q.state
			q.mu.Unlock()
			err = fmt.Errorf("%w: PostSend in %v", ErrState, st)
			break
		}
		if q.tail-q.head == uint64(len(q.sq)) {
			q.mu.Unlock()
			err = ErrQueueFull
			break
		}
		q.pushSlotLocked(wr)
		q.mu.Unlock()
		posted++
	}
	if posted > 0 {
		if !q.inHandler.Load() {
			q.txMu.Lock()
			q.pumpLocked(true)
			q.txMu.Unlock()
		} else if q.txMu.TryLock() {
			q.pumpLocked(false)
			q.txMu.Unlock()
		} else {
			q.wake() // the transmit goroutine is writing: it takes these too
		}
	}
	return posted, err
}

// pushSlotLocked takes the next send-queue slot, which the caller has
// checked is free, for wr. Caller holds mu.
func (q *QP) pushSlotLocked(wr *SendWR) {
	s := &q.sq[q.tail%uint64(len(q.sq))]
	s.wr = *wr
	s.sgl = append(s.sgl[:0], wr.SGL...)
	s.wr.SGL = s.sgl
	if wr.Flags&Inline != 0 {
		s.inline = append(s.inline[:0], wr.Inline...)
		s.wr.Inline = s.inline
	} else {
		s.wr.Inline = nil
	}
	s.seq = q.tail
	s.done, s.status, s.len = false, StatusSuccess, 0
	q.tail++
}

// fastWR reports whether wr may take postFast: an unfenced Send or
// Write.
func fastWR(wr *SendWR) bool {
	return (wr.Op == WRWrite || wr.Op == WRSend) && wr.Flags&^(Inline|Solicited|Signaled) == 0
}

// postFast sends wr, a request fastWR takes that checkSend has passed,
// from an OnInput handler, as header prediction does for TCP: when the
// send queue is idle (every request posted is encoded) and the transmit
// buffer has room, wr is encoded straight into it and written out. An
// unsignaled Send or Write has no completion to order, and takes no
// send-queue slot; holding txMu puts its FPDUs after everything encoded
// before it and before everything after. A signaled one takes a slot,
// marked encoded as it is taken, and, once written out, completes in the
// same hold of mu that retires the slot, rather than in a pump's pass
// over the queue. It reports false, having done nothing, when PostSend's
// ordinary path must run.
func (q *QP) postFast(wr *SendWR) bool {
	if !q.txMu.TryLock() {
		return false
	}
	defer q.txMu.Unlock()
	signaled := wr.Flags&Signaled != 0
	q.mu.Lock()
	ok := q.state == StateRTS && q.sent == q.tail && q.txFits(q.fpdus(wr)*q.cfg.MaxFPDU)
	seq := q.tail
	if ok && signaled {
		// Only behind requests all handed to the transport (as the
		// pump leaves them when it writes everything), with a slot
		// free. It is handed as soon as it is encoded, as the pump
		// assumes, until a write says otherwise.
		ok = q.handed == seq && seq-q.head < uint64(len(q.sq))
		if ok {
			q.pushSlotLocked(wr)
			q.sent, q.handed = q.tail, q.tail
		}
	}
	q.mu.Unlock()
	if !ok {
		return false
	}
	switch ok, err := q.encode(wr, seq); {
	case err != nil:
		q.unhand(signaled, seq)
		q.fail(err, 0)
	case !ok && signaled:
		// The region went away since checkSend: as in pumpLocked.
		q.mu.Lock()
		q.handed = seq
		q.slotDone(seq, StatusLocalProtection, 0)
		q.mu.Unlock()
		q.fail(ErrLocalKey, 0)
	case !ok:
		// As in pumpLocked, the request fails with a completion of its
		// own, after those of the requests before it (the flush).
		q.fail(ErrLocalKey, 0)
		q.cfg.SendCQ.push(WC{ID: wr.ID, Status: StatusLocalProtection, Op: wcOp(wr.Op), QPN: q.num})
	default:
		switch err := q.txTryFlush(); {
		case err != nil:
			q.unhand(signaled, seq)
			q.fail(&ConnError{err}, 0)
		case q.txPending():
			// The transmit goroutine's pump writes the rest and
			// completes the request.
			q.unhand(signaled, seq)
			q.wake()
		case signaled:
			q.mu.Lock()
			if q.state == StateRTS {
				q.slotDone(seq, StatusSuccess, 0)
				q.completeLocked()
			}
			q.mu.Unlock()
		}
	}
	return true
}

// unhand undoes postFast's assumption that the signaled request seq is
// handed to the transport.
func (q *QP) unhand(signaled bool, seq uint64) {
	if signaled {
		q.mu.Lock()
		q.handed = seq
		q.mu.Unlock()
	}
}

func isSendOrWrite(op WROpcode) bool {
	return op == WRSend || op == WRSendWithInv || op == WRWrite || op == WRWriteWithImm
}

func wcOp(op WROpcode) WCOpcode {
	switch op {
	case WRSend, WRSendWithInv:
		return WCSend
	case WRWrite, WRWriteWithImm:
		return WCWrite
	case WRRead:
		return WCRead
	case WRFetchAdd:
		return WCFetchAdd
	}
	return WCCmpSwap
}

// checkSend validates a send request against the queue pair's limits and
// its local keys.
func (q *QP) checkSend(wr *SendWR) error {
	if wr.Op >= numWROps {
		return fmt.Errorf("%w: opcode %d", ErrInvalidWR, wr.Op)
	}
	if len(wr.SGL) > q.cfg.MaxSGE {
		return fmt.Errorf("%w: %d SGEs, at most %d", ErrTooManySGE, len(wr.SGL), q.cfg.MaxSGE)
	}
	if wr.Flags&Inline != 0 {
		switch {
		case wr.Op != WRSend && wr.Op != WRSendWithInv && wr.Op != WRWrite && wr.Op != WRWriteWithImm:
			return fmt.Errorf("%w: inline %v", ErrInvalidWR, wr.Op)
		case len(wr.SGL) != 0:
			return fmt.Errorf("%w: inline request with an SGL", ErrInvalidWR)
		case len(wr.Inline) > q.cfg.MaxInline:
			return fmt.Errorf("%w: %d inline bytes, at most %d", ErrInvalidWR, len(wr.Inline), q.cfg.MaxInline)
		}
		return nil
	}
	need := Access(0)
	var total uint64
	switch wr.Op {
	case WRRead:
		need = LocalWrite
	case WRFetchAdd, WRCmpSwap:
		need = LocalWrite
		if len(wr.SGL) != 1 || wr.SGL[0].Len != 8 {
			return fmt.Errorf("%w: an atomic needs one 8-byte SGE", ErrInvalidWR)
		}
		if wr.RemoteOffset%8 != 0 {
			return fmt.Errorf("%w: atomic remote offset %d not 8-byte aligned", ErrInvalidWR, wr.RemoteOffset)
		}
	}
	for _, s := range wr.SGL {
		if _, ok := q.dev.probe(s.Key, q.pd, need, s.Offset, uint64(s.Len)); !ok {
			return fmt.Errorf("%w: key %#x [%d, +%d)", ErrLocalKey, s.Key, s.Offset, s.Len)
		}
		total += uint64(s.Len)
	}
	if total > 1<<31 {
		return fmt.Errorf("%w: %d bytes in one request", ErrInvalidWR, total)
	}
	return nil
}

// fail moves the queue pair to Error with err, flushes it, and ends the
// connection: with a Terminate carrying c first when c is not zero.
func (q *QP) fail(err error, c termCode) {
	q.mu.Lock()
	if q.state == StateError {
		q.mu.Unlock()
		return
	}
	prev := q.state
	q.state, q.err = StateError, err
	q.errored.Store(true)
	if c != 0 && q.respN < len(q.resp) {
		q.resp[(q.respH+q.respN)%len(q.resp)] = response{kind: respTerminate, term: c}
		q.respN++
	}
	q.flushLocked()
	conn := q.conn
	q.mu.Unlock()
	select {
	case q.placed <- struct{}{}:
	default:
	}
	if conn != nil && prev >= StateRTR {
		// The transmit goroutine sends the Terminate and closes the
		// connection; if it is stuck in a write the peer does not drain,
		// this unsticks it.
		time.AfterFunc(2*lingerTime, func() { conn.Close() })
		q.wake()
	} else if conn != nil {
		conn.Close()
	}
}

// flushLocked completes every outstanding send request (the ones with a
// status of their own first, in order) and every posted receive of the
// queue pair's own receive queue with StatusFlush.
func (q *QP) flushLocked() {
	// As in verbs, everything after the first failed request is
	// flushed, even what had finished; Sends and Writes before it that
	// were handed to the transport succeeded.
	failed := false
	for i := q.head; i < q.tail; i++ {
		s := &q.sq[i%uint64(len(q.sq))]
		switch {
		case s.done && s.status != StatusSuccess:
			failed = true
		case failed:
			s.done, s.status = true, StatusFlush
		case s.done:
		case i < q.handed && isSendOrWrite(s.wr.Op):
			s.done, s.status = true, StatusSuccess
		default:
			s.done, s.status = true, StatusFlush
			failed = true
		}
	}
	q.sent = q.tail
	q.ordN = 0
	q.completeLocked()
	if q.srq == nil {
		var r recvSlot
		for q.rq.take(&r) {
			q.cfg.RecvCQ.push(WC{ID: r.id, Status: StatusFlush, Op: WCRecv, QPN: q.num})
		}
	}
}

// completeLocked retires finished send requests from the head, in order:
// signaled or failed ones produce completions, unsignaled successes just
// free their slots.
func (q *QP) completeLocked() {
	overflow := false
	for q.head < q.tail {
		s := &q.sq[q.head%uint64(len(q.sq))]
		if !s.done {
			break
		}
		if s.wr.Flags&Signaled != 0 || s.status != StatusSuccess {
			if !q.cfg.SendCQ.push(WC{ID: s.wr.ID, Status: s.status, Op: wcOp(s.wr.Op), Len: s.len, QPN: q.num}) {
				overflow = true
			}
		}
		q.head++
	}
	if overflow && q.state != StateError {
		q.state, q.err = StateError, ErrCQOverflow
		q.errored.Store(true)
		q.flushLocked()
		q.wake()
	}
}

func (q *QP) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// slotDone marks the request seq finished with status.
func (q *QP) slotDone(seq uint64, status Status, n uint32) {
	if seq < q.head || seq >= q.tail {
		return
	}
	s := &q.sq[seq%uint64(len(q.sq))]
	if !s.done {
		s.done, s.status, s.len = true, status, n
	}
}
