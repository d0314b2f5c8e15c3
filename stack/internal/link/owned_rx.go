package link

import (
	"github.com/ustack-dev/ustack/stack/internal/fastflow"
)

// ownedLookup returns the owned connection a segment of key is for, or
// nil.
func (q *queue) ownedLookup(key *ownKey) *Owned {
	o := &q.own
	slot := &o.cache[key.slot()]
	if e := slot.Load(); e != nil && e.key == *key {
		return e
	}
	o.mu.Lock()
	e := o.table[*key]
	if e != nil {
		slot.Store(e)
	}
	o.mu.Unlock()
	return e
}

// ownedReceive offers an owned connection's segment (frame, checksums
// verified) to the fast path, and reports whether it took it. If not,
// the connection is netstack's again and the caller delivers the same
// segment the ordinary way.
func (q *queue) ownedReceive(e *Owned, frame []byte) bool {
	owner := e.owner
	owner.Lock()
	if !e.live {
		owner.Unlock()
		return false
	}
	o := &q.own
	if o.chaos != nil && o.chaos() || !owner.Begin() {
		e.demote(DemoteOwner)
		owner.Unlock()
		return false
	}
	took := q.ownedSegment(e, frame)
	owner.Unlock()
	owner.End()
	return took
}

// ownedSegment is ownedReceive's work on the segment, under the owner's
// lock, Begin having admitted it.
func (q *queue) ownedSegment(e *Owned, frame []byte) bool {
	o := &q.own
	owner := e.owner
	f := o.slab.Flow(e.idx)
	// The batch's time, read by the worker as it began: no clock read
	// per segment. The handler's writes during Traffic take it too.
	clk := q.batchClock()
	o.rxClock, e.inRx = clk, true
	in, r := f.Receive(frame, clk)
	if r != fastflow.OK {
		e.inRx = false
		e.demote(int(r))
		return false
	}
	o.segsIn.Add(1)
	if len(in.Payload) > 0 {
		o.bytesIn.Add(uint64(len(in.Payload)))
		owner.Traffic(in.Payload)
	}
	e.inRx = false
	if !e.live {
		return true // the owner's write or close demoted it
	}
	if e.send(clk) {
		if owed, due := f.AckOwed(); owed {
			switch {
			case in.AckNow || o.delack == 0:
				// At the batch's end, if no reply carries it by then:
				// one pure ACK a flow a batch, however many of its
				// segments the batch held.
				if !e.ackQueued {
					e.ackQueued = true
					o.acks = append(o.acks, e)
				}
			case o.delack != fastflow.DelayedAck && due == clk.Us+fastflow.DelayedAck:
				// Owed since this segment: due after Config.DelayedAck.
				f.SetAckDue(clk.Us + o.delack)
			}
		}
	}
	if e.live {
		o.arm(e, clk)
	}
	return true
}

// sendAcks sends the ACKs the batch's segments made owed now and no reply
// carried; the worker's, at the batch's end.
func (q *queue) sendAcks() {
	o := &q.own
	clk := q.batchClock()
	for i, e := range o.acks {
		e.owner.Lock()
		e.ackQueued = false
		if e.live {
			if owed, _ := o.slab.Flow(e.idx).AckOwed(); owed {
				e.ack(clk)
			}
		}
		e.owner.Unlock()
		o.acks[i] = nil
	}
	o.acks = o.acks[:0]
}

// batchClock returns the Clock of the RX batches the worker is
// delivering (from its reading as they began), or the clock's now
// outside them.
func (q *queue) batchClock() fastflow.Clock {
	if q.rxStart != 0 {
		return fastflow.ClockAt(int64(q.rxStart + q.own.busyToMono))
	}
	clk, _ := q.own.now()
	return clk
}
