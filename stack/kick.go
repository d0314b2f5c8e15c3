package stack

import (
	"time"
)

// The kick policy: while a worker spins it owns the kicks, one sendto per
// loop for everything writers queued; a worker that stops spinning hands
// them back to the writers.

// flushTx kicks what writers left on the TX ring for the worker, and
// anything a kick left behind (EAGAIN). Called by the worker only.
func (q *queue) flushTx() {
	if q.io.TxQueued() == 0 {
		return
	}
	q.kick()
}

// kick asks the kernel to send what is on the TX ring.
func (q *queue) kick() error {
	err := q.io.Kick()
	if t := q.trace; t != nil {
		t.kicked()
	}
	return err
}

// stopSpinning hands the kicks back to the writers and sends what they
// left for the worker. Paired with kickIfWorkerStopped: a writer either
// queued its frames before this flush sees the ring, or sees spinning
// false and kicks itself (sequentially consistent atomics on both sides).
func (q *queue) stopSpinning() {
	q.spinning.Store(false)
	if q.io.TxQueued() > 0 {
		q.kick()
	}
}

// kickIfWorkerStopped is called by a writer after leaving its kick to the
// worker: if the worker stopped spinning meanwhile, the writer kicks.
func (q *queue) kickIfWorkerStopped() {
	if !q.spinning.Load() {
		q.kick()
	}
}

// sleep blocks an adaptive worker in Wait, first making sure nothing is
// left for it to kick.
func (q *queue) sleep(ready *readyList) {
	q.stopSpinning()
	q.wait(ready)
	q.spinning.Store(true)
}

// wait blocks the worker in Wait unless worker-read connections are ready
// (see endpoint.wakeForReady for the other side).
func (q *queue) wait(ready *readyList) {
	q.awake.Store(false)
	if ready.n.Load() == 0 {
		q.io.Wait(100 * time.Millisecond)
	}
	q.awake.Store(true)
}
