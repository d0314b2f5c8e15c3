package link

import (
	"time"

	"github.com/ustack-dev/ustack/stack/internal/fastflow"
)

// arm makes sure the queue's timer fires by e's next deadline: its owed
// ACK's, or its tail loss probe's while data is in flight. The
// timer is armed for the earliest deadline and re-armed only when it
// fires, not per request: a deadline later than the armed one costs a
// comparison. clk is the caller's Clock. Under e's owner's lock.
func (o *owned) arm(e *Owned, clk fastflow.Clock) {
	f := o.slab.Flow(e.idx)
	owed, due := f.AckOwed()
	var at uint32
	switch {
	case owed:
		at = due
	case f.InFlight() > 0:
		at = f.ProbeAt()
	default:
		return
	}
	if a := o.armedAt.Load(); a != 0 && int32(uint32(a)-at) <= 0 {
		return
	}
	wait := time.Duration(max(int32(at-clk.Us), 0)) * time.Microsecond
	o.timerMu.Lock()
	defer o.timerMu.Unlock()
	if a := o.armedAt.Load(); o.stopped || a != 0 && int32(uint32(a)-at) <= 0 {
		return
	}
	o.armedAt.Store(uint64(at) | 1<<32)
	if o.timer == nil {
		o.timer = time.AfterFunc(wait, o.fire)
		return
	}
	o.timer.Reset(wait)
}

// stopOwned stops the queue's timer (the endpoint closing).
func (q *queue) stopOwned() {
	o := &q.own
	o.timerMu.Lock()
	if o.timer != nil {
		o.timer.Stop()
	}
	o.stopped = true
	o.timerMu.Unlock()
}

// fire is the timer's: it has a worker run ownedTick.
func (o *owned) fire() {
	o.timerMu.Lock()
	o.armedAt.Store(0)
	o.timerMu.Unlock()
	o.tick.Push()
}

// ownedTick sends the ACKs owed past their deadline, demotes the flows
// whose data is in flight past its probe deadline (netstack then probes
// or retransmits), gives idle flows' rings back, then re-arms the timer
// for the next deadline. On a worker.
func (q *queue) ownedTick() {
	o := &q.own
	for _, e := range o.carried() {
		owner := e.owner
		if !owner.TryLock() {
			// Busy elsewhere: look again soon.
			clk, _ := o.now()
			o.timerMu.Lock()
			if !o.stopped {
				o.armedAt.Store(uint64(clk.Us+1000) | 1<<32)
				o.timer.Reset(time.Millisecond)
			}
			o.timerMu.Unlock()
			continue
		}
		if e.live {
			q.ownedDeadlines(e)
		}
		owner.Unlock()
	}
	q.flushTx()
}

// ownedDeadlines acts on e's deadlines that have passed. Under its
// owner's lock.
func (q *queue) ownedDeadlines(e *Owned) {
	o := &q.own
	f := o.slab.Flow(e.idx)
	clk, _ := o.now()
	if e.held.Swap(false) {
		// netstack holds a segment of the connection: it takes the
		// connection back and processes it.
		e.demote(DemoteHeld)
		return
	}
	if f.InFlight() > 0 && int32(clk.Us-f.ProbeAt()) >= 0 {
		// The tail loss probe's deadline: netstack, taking the
		// connection back, sends the probe (or retransmits) at once.
		e.demote(DemoteTimeout)
		return
	}
	if owed, due := f.AckOwed(); owed && int32(clk.Us-due) >= 0 {
		e.ack(clk)
	}
	if f.InFlight() == 0 && f.Unsent() == 0 {
		// Idle since at least the last deadline: the ring goes back
		// (kept between a flow's requests, so as not to take and give
		// it back per reply).
		e.dropRing()
	}
	o.arm(e, clk)
}
