package qp

import (
	"net"
	"syscall"
	"time"

	"github.com/ustack-dev/ustack/capability"
)

// Transport glue: how the engine meets its connection. start attaches
// it: over a ustack TCP connection (capability.WorkerPoller) the stack's
// worker feeds input right after TCP processing; over any other net.Conn
// a reader goroutine (readLoop) does. Both call consumeData with the bytes
// and afterInput after each read. Writes that must not wait go through
// tryWrite (the connection's TryWrite, or non-blocking write(2)s on a
// kernel socket); the transmit goroutine (txLoop) does the writes that
// may, and closes the connection after a failure.

// lingerTime bounds how long a failed queue pair waits for its peer to
// close after sending it a Terminate.
const lingerTime = 2 * time.Second

// tryWrite writes what the connection takes of b without waiting:
// through TryWrite, or with non-blocking write(2)s on a kernel socket.
// Over another kind of connection it writes nothing (the transmit
// goroutine will). Caller holds txMu.
func (q *QP) tryWrite(b []byte) (int, error) {
	if q.tryW != nil {
		return q.tryW.TryWrite(b)
	}
	switch c := q.conn.(type) {
	case syscall.Conn:
		if q.raw == nil {
			rc, err := c.SyscallConn()
			if err != nil {
				return 0, nil
			}
			q.raw, q.rawWrite = rc, q.writeRaw
		}
		q.tw.b, q.tw.n, q.tw.err = b, 0, nil
		err := q.raw.Write(q.rawWrite)
		n, werr := q.tw.n, q.tw.err
		q.tw.b, q.tw.err = nil, nil
		if werr == nil {
			werr = err
		}
		return n, werr
	}
	return 0, nil
}

// writeRaw is tryWrite's write(2)s of q.tw.b on a kernel socket: as much
// as the socket takes now. Caller holds txMu.
func (q *QP) writeRaw(fd uintptr) bool {
	for q.tw.n < len(q.tw.b) {
		k, e := syscall.Write(int(fd), q.tw.b[q.tw.n:])
		if e == syscall.EINTR {
			continue
		}
		if e != nil {
			if e != syscall.EAGAIN {
				q.tw.err = e
			}
			break
		}
		q.tw.n += k
	}
	return true // never wait for room
}

// start attaches conn and starts the engine; the queue pair moves to RTS.
// Over a transport that reads for it (capability.WorkerPoller) the
// engine's receive side runs there; otherwise a goroutine reads the
// connection.
func (q *QP) start(conn net.Conn) {
	wp, polled := conn.(capability.WorkerPoller)
	polled = polled && !q.cfg.ReaderGoroutine
	q.mu.Lock()
	q.conn = conn
	q.state = StateRTS
	q.mu.Unlock()
	q.txMu.Lock()
	if l, ok := conn.(capability.LendWriter); ok && !q.cfg.CopyTransmit {
		q.lender = l
	}
	// Asserted once: a type switch per write costs an interface
	// lookup.
	q.tryW, _ = conn.(capability.TryWriter)
	q.txMu.Unlock()
	q.wg.Add(2)
	if polled && wp.PollOnWorker(q.consumeData, q.afterInput, q.readDone) != nil {
		polled = false
	}
	q.mu.Lock()
	q.polled = polled
	q.mu.Unlock()
	if !polled {
		if q.rbuf == nil {
			q.rbuf = make([]byte, 64<<10)
		}
		go q.readLoop()
	}
	go q.txLoop()
}

// readLoop feeds input from the connection until it fails.
func (q *QP) readLoop() {
	for {
		n, err := q.conn.Read(q.rbuf)
		if n > 0 {
			q.consumeData(q.rbuf[:n])
			q.afterInput()
		}
		if err != nil {
			q.readDone(err)
			return
		}
	}
}

// consumeData places bytes read from the connection: on the reader
// goroutine, or on ustack's worker with the connection locked (so it
// never writes to it).
func (q *QP) consumeData(b []byte) {
	if q.draining {
		return
	}
	if !q.fed {
		q.fed = true
		q.wakeMark = q.cqWakes()
	}
	if !q.input(b) {
		// Keep reading, and discard, until the peer closes: closing
		// with unread data would reset the connection and could destroy
		// the Terminate on its way to the peer.
		q.draining = true
	}
}

// afterInput sends the responses input queued and runs the OnInput
// handler, once per read that brought input (the failing one included):
// on the reader goroutine, or on ustack's worker with the connection
// unlocked. It reports whether input or the handler notified a channel an
// application goroutine may wait on (a CQ's Notify, Placed): ustack's
// worker then yields to it.
func (q *QP) afterInput() (woke bool) {
	if !q.fed {
		return false
	}
	q.fed = false
	if !q.draining {
		q.respondInline()
	}
	if h := q.cfg.OnInput; h != nil {
		q.inHandler.Store(true)
		h()
		q.inHandler.Store(false)
	}
	woke = q.placedWoke || q.cqWakes() != q.wakeMark
	q.placedWoke = false
	return woke
}

// cqWakes is the sum of the queue pair's CQs' wakes.
func (q *QP) cqWakes() uint64 {
	n := q.cfg.SendCQ.wakes.Load()
	if q.cfg.RecvCQ != q.cfg.SendCQ {
		n += q.cfg.RecvCQ.wakes.Load()
	}
	return n
}

// readDone ends the receive side once the stream has ended with err.
func (q *QP) readDone(err error) {
	defer q.wg.Done()
	q.fail(&ConnError{err}, 0)
	q.conn.Close()
}

// ConnError is a queue pair's error after its connection failed or
// closed.
type ConnError struct{ Err error }

func (e *ConnError) Error() string { return "qp: connection: " + e.Err.Error() }
func (e *ConnError) Unwrap() error { return e.Err }

// txLoop sends responses and held-back requests; once the queue pair is
// in Error it sends any Terminate, closes the connection and returns.
func (q *QP) txLoop() {
	defer q.wg.Done()
	for range q.kick {
		q.txMu.Lock()
		done := q.respond(true)
		if !done {
			q.pumpLocked(true)
		}
		q.txMu.Unlock()
		if done {
			// Half-close: the peer reads everything sent, the Terminate
			// included, then closes its end, which ends readLoop.
			conn := q.conn
			if cw, ok := conn.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
				conn.Close()
			}
			if q.polled {
				// No read to put a deadline on: the worker reads.
				time.AfterFunc(lingerTime, func() { conn.Close() })
			} else {
				conn.SetReadDeadline(time.Now().Add(lingerTime))
			}
			return
		}
	}
}
