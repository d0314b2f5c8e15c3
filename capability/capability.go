package capability

// WorkerPoller is implemented by the net.Conn values ustack's TCP hands
// out (Listen, Dial): the connection's reading moves onto the worker.
// Assert it on a net.Conn to find out whether the connection has it:
//
//	if wp, ok := conn.(capability.WorkerPoller); ok { ... }
//
// PollOnWorker calls consume with the bytes, straight from netstack's
// buffers (or from the receive frame) and with the connection locked,
// right after the TCP processing that brought them, then consumed with it
// unlocked (which may write with TryWrite; it reports whether it readied
// a goroutine; for bytes from the frame it runs before the ACK their
// segment carried is processed, so what it writes goes first); neither
// may block. done is called once, on a goroutine of its own, when the stream
// ends. Read fails afterwards. Package qp runs its engine this way. For a
// whole application on the worker, see stack.Handler.
type WorkerPoller interface {
	PollOnWorker(consume func(b []byte), consumed func() (woke bool), done func(error)) error
}

// TryWriter is implemented by ustack's TCP net.Conn values: TryWrite
// writes what of b the send buffer takes now, without waiting, and
// returns how much that was (0 if another Write holds the connection).
// Code running on the worker (a WorkerPoller's consumed) writes with it.
type TryWriter interface {
	TryWrite(b []byte) (int, error)
}

// Lender is told when memory lent to a connection's send queue
// (LendWriter) is read no more: its Release is called once for each
// write that lent memory, when netstack is done with the bytes that
// write queued (they were acknowledged, or the connection is gone), on
// the goroutine that let go of them, usually the worker with the
// connection locked: it must not block or use the connection. (An alias,
// so that an implementation of LendWriter may spell its parameter
// interface{ Release() } without importing this package.)
type Lender = interface{ Release() }

// LendWriter is implemented by ustack's TCP net.Conn values: WriteLent
// and TryWriteLent are Write and TryWrite (TryWriter) without the copy
// into the send buffer. netstack reads the queued bytes of b in place,
// for each segment's frame and any retransmission, until they are
// acknowledged; then l.Release is called. Until then b must not change.
// Package qp's engine lends its transmit buffer this way, so a byte is
// copied once on its way from registered memory to the TX ring besides
// the copy into the frame.
type LendWriter interface {
	WriteLent(b []byte, l Lender) (int, error)
	TryWriteLent(b []byte, l Lender) (int, error)
}
