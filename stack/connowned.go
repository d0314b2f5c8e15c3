package stack

import "github.com/ustack-dev/ustack/stack/internal/link"

// The owned fast path's side of a connection read on the worker
// (PollOnWorker: a queue pair's engine). While the worker carries the
// connection (link.Owned), what arrives goes to the consumer from the
// frame, and writes go into the connection's send ring. Every write into
// netstack takes the connection's ownMu too, so a promotion never comes
// between a writer's look at who carries the connection and its write.
//
// Locks, in order: writeMu (a writer's, held across its waits), readMu
// (the consumer's: consume and consumed run under it), ownMu (short:
// the flow, or one netstack write), then netstack's. The fast path's
// receive holds ownMu and only tries readMu (Begin), so the consumer's
// writes, which take ownMu under readMu, never wait on it in a cycle.

// connOwner is a worker-read connection as the owned fast path sees it:
// a type of its own, so that the connection's API does not grow these
// methods.
type connOwner tcpConn

func (o *connOwner) Lock()         { o.ownMu.Lock() }
func (o *connOwner) Unlock()       { o.ownMu.Unlock() }
func (o *connOwner) TryLock() bool { return o.ownMu.TryLock() }

// Ownable reports whether the connection may be carried: its reading is
// on the worker and neither side is closed or shut down.
func (o *connOwner) Ownable() bool {
	c := (*tcpConn)(o)
	p := c.poll.Load()
	return p != nil && !p.Ended() && !c.noOwn.Load()
}

// Owned records who carries the connection: o, or netstack (nil). A
// writer waiting for room in netstack's send buffer is woken on a
// promotion: the hand-out released the buffer without telling it, and
// the owned path's ring takes its bytes now.
func (o *connOwner) Owned(w *link.Owned) {
	o.own = w
	if w != nil {
		select {
		case o.wNotify <- struct{}{}:
			o.s.ep.SetWoke()
		default:
		}
	}
}

// Begin takes the consumer's lock for the segment, if no other worker
// is reading the connection (a read that began before the promotion).
func (o *connOwner) Begin() bool {
	c := (*tcpConn)(o)
	if !c.readMu.TryLock() {
		return false
	}
	if p := c.poll.Load(); p == nil || p.Ended() {
		c.readMu.Unlock()
		return false
	}
	return true
}

// Traffic gives the consumer bytes the owned fast path received, from
// the frame, as placeDirect does netstack's.
func (o *connOwner) Traffic(b []byte) {
	c := (*tcpConn)(o)
	if t := c.s.ep.Trace(); t != nil {
		t.Read()
	}
	c.s.pollDirect.Add(uint64(len(b)))
	c.poll.Load().w.consume(b)
	c.fed = true
}

// End calls consumed for what Traffic gave, the connection unlocked (its
// answers are written now and carry the segment's ACK), and lets the
// consumer's lock go.
func (o *connOwner) End() {
	c := (*tcpConn)(o)
	woke := false
	if c.fed {
		c.fed = false
		if p := c.poll.Load(); !p.Ended() {
			woke = p.consumed()
		}
	}
	c.readMu.Unlock()
	if woke {
		c.s.ep.SetWoke()
	}
}

// ownedWrite gives what it can of b to the owned fast path if it carries
// the connection, and returns how much it took (the rest goes to
// netstack, the connection being netstack's again). With ownMu held.
func (c *tcpConn) ownedWrite(b []byte) int {
	if c.own == nil || len(b) == 0 {
		return 0
	}
	return c.own.Write(b)
}

// disown hands the connection back to netstack for good, if the owned
// fast path may carry it: before a close or shutdown, which are
// netstack's.
func (c *tcpConn) disown() {
	c.noOwn.Store(true)
	if !c.ownReg.Load() {
		return
	}
	c.ownMu.Lock()
	if c.own != nil {
		c.own.Demote(link.DemoteClose)
	}
	c.ownMu.Unlock()
}
