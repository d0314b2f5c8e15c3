package qp

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"
)

// Connection setup: MPA revision 1 (RFC 5044 §7), markers off, CRC on.
// The initiator sends an MPA Request and waits for the Reply; the
// responder answers with a Reply (or a Reply with the reject flag and
// closes). After the exchange both ends send FPDUs. RFC 5044 asks a
// revision 1 responder to wait for the initiator's first FPDU before
// sending; ustack's responder does not wait (TCP's ordering already puts
// its Reply before its FPDUs), so an application may have the server
// send first.

// Connect runs the initiator's half of connection setup over conn, a
// connected reliable byte stream (a kernel TCP connection or a ustack
// one), carrying privateData (at most MaxPrivateData bytes). The queue
// pair must be in Init; on success it is in RTS, owns conn, and Connect
// returns the peer's private data. If the peer rejects, the error is a
// *RejectError (errors.Is ErrRejected) and conn is closed. ctx bounds
// the exchange.
func (q *QP) Connect(ctx context.Context, conn net.Conn, privateData []byte) ([]byte, error) {
	if len(privateData) > MaxPrivateData {
		return nil, fmt.Errorf("%w: %d bytes of private data, at most %d", ErrInvalidArg, len(privateData), MaxPrivateData)
	}
	if err := q.toRTR(); err != nil {
		return nil, err
	}
	stop := watch(ctx, conn)
	_, err := conn.Write(appendMPA(nil, mpaFrame{crc: true, rev: mpaRevision, privateData: privateData}))
	var rep mpaFrame
	var pd []byte
	if err == nil {
		rep, pd, err = readMPA(conn, true)
	}
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err == nil && rep.reject {
		err = &RejectError{PrivateData: pd}
	} else if err == nil && (rep.markers || !rep.crc) {
		err = fmt.Errorf("%w: reply asks for markers %v, CRC %v; ustack does markers off, CRC on", ErrMPA, rep.markers, rep.crc)
	}
	if err != nil {
		conn.Close()
		q.backToInit()
		return nil, fmt.Errorf("qp: connect: %w", err)
	}
	q.start(conn)
	return pd, nil
}

// watch makes conn's pending and future I/O fail when ctx ends; the
// returned stop undoes that and reports whether ctx had not ended.
func watch(ctx context.Context, conn net.Conn) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	after := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	return func() bool {
		ok := after()
		conn.SetDeadline(time.Time{})
		return ok
	}
}

// readMPA reads an MPA request or reply with its private data.
func readMPA(r io.Reader, reply bool) (mpaFrame, []byte, error) {
	var h [mpaHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return mpaFrame{}, nil, fmt.Errorf("read MPA header: %w", err)
	}
	f, n, err := parseMPAHeader(h[:], reply)
	if err != nil {
		return mpaFrame{}, nil, err
	}
	pd := make([]byte, n)
	if _, err := io.ReadFull(r, pd); err != nil {
		return mpaFrame{}, nil, fmt.Errorf("read MPA private data: %w", err)
	}
	return f, pd, nil
}

func (q *QP) toRTR() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state != StateInit {
		return fmt.Errorf("%w: connect in %v, want %v", ErrState, q.state, StateInit)
	}
	q.state = StateRTR
	return nil
}

func (q *QP) backToInit() {
	q.mu.Lock()
	if q.state == StateRTR {
		q.state = StateInit
	}
	q.mu.Unlock()
}

// Listener accepts queue-pair connections on a stream listener.
type Listener struct {
	ln net.Listener
}

// NewListener wraps ln, a kernel or ustack TCP listener. Closing the
// Listener closes ln.
func NewListener(ln net.Listener) *Listener { return &Listener{ln: ln} }

// Addr is the listener's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close closes the underlying listener.
func (l *Listener) Close() error { return l.ln.Close() }

// Accept waits for a connection and its MPA Request. A connection whose
// request is malformed is closed and skipped; ctx bounds the wait for
// each request.
func (l *Listener) Accept(ctx context.Context) (*ConnRequest, error) {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return nil, err
		}
		r, err := ReadRequest(ctx, c)
		if err == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// ConnRequest is an incoming connection waiting to be accepted or
// rejected.
type ConnRequest struct {
	conn net.Conn
	pd   []byte
	done bool
}

// ReadRequest reads the MPA Request from conn, a freshly accepted
// stream, and returns it for Accept or Reject. On error conn is closed.
func ReadRequest(ctx context.Context, conn net.Conn) (*ConnRequest, error) {
	stop := watch(ctx, conn)
	req, pd, err := readMPA(conn, false)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err == nil && (req.markers || !req.crc) {
		// Answer with what ustack does; the initiator decides.
		err = fmt.Errorf("%w: request asks for markers %v, CRC %v", ErrMPA, req.markers, req.crc)
		conn.Write(appendMPA(nil, mpaFrame{reply: true, crc: true, reject: true, rev: mpaRevision}))
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("qp: read connection request: %w", err)
	}
	return &ConnRequest{conn: conn, pd: pd}, nil
}

// PrivateData is the initiator's private data.
func (r *ConnRequest) PrivateData() []byte { return r.pd }

// RemoteAddr is the initiator's address.
func (r *ConnRequest) RemoteAddr() net.Addr { return r.conn.RemoteAddr() }

// Accept answers with an MPA Reply carrying privateData and binds the
// connection to q, which must be in Init and moves to RTS.
func (r *ConnRequest) Accept(q *QP, privateData []byte) error {
	if r.done {
		return fmt.Errorf("%w: request already answered", ErrState)
	}
	if len(privateData) > MaxPrivateData {
		return fmt.Errorf("%w: %d bytes of private data, at most %d", ErrInvalidArg, len(privateData), MaxPrivateData)
	}
	if err := q.toRTR(); err != nil {
		return err
	}
	r.done = true
	if _, err := r.conn.Write(appendMPA(nil, mpaFrame{reply: true, crc: true, rev: mpaRevision, privateData: privateData})); err != nil {
		r.conn.Close()
		q.backToInit()
		return fmt.Errorf("qp: accept: %w", err)
	}
	q.start(r.conn)
	return nil
}

// Reject answers with an MPA Reply with the reject flag, carrying
// privateData, and closes the connection.
func (r *ConnRequest) Reject(privateData []byte) error {
	if r.done {
		return fmt.Errorf("%w: request already answered", ErrState)
	}
	if len(privateData) > MaxPrivateData {
		return fmt.Errorf("%w: %d bytes of private data, at most %d", ErrInvalidArg, len(privateData), MaxPrivateData)
	}
	r.done = true
	_, err := r.conn.Write(appendMPA(nil, mpaFrame{reply: true, crc: true, reject: true, rev: mpaRevision, privateData: privateData}))
	if cerr := r.conn.Close(); err == nil {
		err = cerr
	}
	return err
}
