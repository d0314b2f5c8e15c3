package link

import (
	"sync/atomic"
	"time"
)

// The kick protocol: who sends what the TX ring holds, and who wakes the
// worker. A copy-mode AF_XDP socket sends only when kicked (a sendto),
// and on veth the kick runs the peer's receive path inside the call, so
// the number of kicks, and which thread makes them, decide latency. Three
// flags per queue, shared by its worker and the goroutines that write
// and notify, settle it; they are touched only here.
//
//   - spinning: set while the worker busy-polls. It then owns the kicks:
//     at the top of every loop it kicks once (flushTx) for everything
//     writers queued meanwhile, so the replies a batch readied leave
//     together. A writer leaves its kick to it (kickAfterWrite) unless
//     its write was a burst of its own or a full batch waits, which go at
//     once. A worker that stops spinning (stopSpinning: to sleep, or to
//     exit) clears the flag and then kicks what is queued; a writer
//     queues its frames and then reads the flag, kicking itself if it is
//     clear (kickIfWorkerStopped). With sequentially consistent atomics
//     on both sides, either the worker's flush sees the frames or the
//     writer sees the flag clear: no frame waits for a kick nobody makes.
//   - awake: set while the worker is not blocked in Wait, so it will
//     look at the endpoint's ready list (PollOnWorker connections made
//     readable off the worker). The same pairing: the worker clears it
//     and then checks the list before it blocks (wait); a goroutine adds
//     to the list and then reads the flag, interrupting the worker if no
//     worker is awake (wakeForReady).
//   - woke: set when a notification may have readied an application's
//     goroutine (wakeNotifier, a PollOnWorker consumer), on every queue,
//     since the goroutine is on the P of whichever worker ran the
//     notifier. After an RX batch the worker yields its P only if it was
//     set (takeWoke), so the readied goroutines write their replies
//     before the next kick; a yield with nothing runnable would cost a
//     futex wake of an idle P's thread.
type workerFlags struct {
	spinning, awake, woke atomic.Bool
}

// startWorker sets the flags of a worker that starts polling.
func (q *queue) startWorker(spin bool) {
	q.flags.spinning.Store(spin)
	q.flags.awake.Store(true)
}

// flushTx kicks what writers left on the TX ring for the worker, and
// anything a kick left behind (EAGAIN). Called by the worker only.
func (q *queue) flushTx() {
	if q.io.TxQueued() == 0 {
		return
	}
	q.kick()
}

// kick asks the kernel to send what is on the TX ring, and counts the
// time it took (Counters.KickTime).
func (q *queue) kick() error { return q.kickFrom(busyClock()) }

// kickFrom is kick for a caller that has just read the clock: start is
// that reading (busyClock), the kick's own start.
func (q *queue) kickFrom(start time.Duration) error {
	err := q.io.Kick()
	q.kickTime.Add(int64(busyClock() - start))
	if t := q.trace; t != nil {
		t.Kicked()
	}
	return err
}

// writerKickFrames is how many frames one write must queue for its
// writer to kick even while the worker spins: replies of a frame or two,
// from however many connections, are left to the worker's batch; a
// window's worth of bulk data is not.
const writerKickFrames = 8

// kickAfterWrite is a writer's kick decision once a write has put frames
// frames on the TX ring.
func (q *queue) kickAfterWrite(frames uint64) {
	switch {
	case q.io.TxQueued() >= BatchSize || frames >= writerKickFrames:
		// A full batch is waiting, or this write was a burst of its
		// own (a bulk sender's): send it now rather than after the
		// worker's next turn. In copy mode a kick runs the frames
		// through veth and the peer's receive path inside sendto; a
		// burst left to the worker holds its thread there while the
		// ACKs for the previous burst wait on the RX ring.
		q.kickQueued()
	case q.flags.spinning.Load():
		// The spinning worker kicks at the top of its next loop, once
		// for everything writers queued meanwhile: after a delivery it
		// yields to the readied goroutines first, so their replies
		// leave in one batch.
		q.kickIfWorkerStopped()
	default:
		q.kickQueued()
	}
}

// kickQueued kicks for packets WritePackets has already put on the TX
// ring. A failed kick does not unsend them: they stay queued for the next
// kick (the worker's, or the next writer's), so it is not reported to
// netstack, which would otherwise count queued packets as lost.
func (q *queue) kickQueued() { _ = q.kick() }

// stopSpinning hands the kicks back to the writers and sends what they
// left for the worker (the worker's half of the spinning pairing).
func (q *queue) stopSpinning() {
	q.flags.spinning.Store(false)
	if q.io.TxQueued() > 0 {
		q.kick()
	}
}

// kickIfWorkerStopped is called by a writer after leaving its kick to the
// worker: if the worker stopped spinning meanwhile, the writer kicks (the
// writer's half of the spinning pairing).
func (q *queue) kickIfWorkerStopped() {
	if !q.flags.spinning.Load() {
		q.kick()
	}
}

// sleep blocks an adaptive worker in Wait, first making sure nothing is
// left for it to kick.
func (q *queue) sleep(ready *ReadyList) {
	q.stopSpinning()
	q.wait(ready)
	q.flags.spinning.Store(true)
}

// wait blocks the worker in Wait unless worker-read connections are ready
// (the worker's half of the awake pairing; wakeForReady is the other).
func (q *queue) wait(ready *ReadyList) {
	q.flags.awake.Store(false)
	if ready.n.Load() == 0 {
		q.io.Wait(100 * time.Millisecond)
	}
	q.flags.awake.Store(true)
}

// workerAwake reports whether the worker is not blocked in Wait (read by
// wakeForReady after it adds to the ready list).
func (q *queue) workerAwake() bool { return q.flags.awake.Load() }

// noteWoke tells the worker a goroutine may have been readied on its P.
func (q *queue) noteWoke() { q.flags.woke.Store(true) }

// takeWoke reports, and clears, whether a goroutine may have been readied
// since the worker last asked.
func (q *queue) takeWoke() bool { return q.flags.woke.Swap(false) }
