package qp

import (
	"errors"
	"fmt"
)

// Errors returned synchronously by the verbs. Match them with errors.Is.
var (
	// ErrState: the queue pair is not in a state that allows the call
	// (posting sends before RTS, receives in Reset, connecting twice).
	ErrState = errors.New("qp: wrong queue pair state")
	// ErrQueueFull: the send, receive or shared receive queue has no free
	// slot.
	ErrQueueFull = errors.New("qp: queue full")
	// ErrTooManySGE: a work request has more scatter-gather entries than
	// the queue allows.
	ErrTooManySGE = errors.New("qp: too many scatter-gather entries")
	// ErrLocalKey: an SGE names no registered region of this protection
	// domain, lies outside it, or needs a right it lacks.
	ErrLocalKey = errors.New("qp: bad local key or bounds")
	// ErrInvalidWR: a work request is malformed (unknown opcode, inline
	// data too long, an atomic that is not 8 bytes or not aligned).
	ErrInvalidWR = errors.New("qp: invalid work request")
	// ErrInvalidArg: a bad argument to a constructor or registration.
	ErrInvalidArg = errors.New("qp: invalid argument")
	// ErrMPA: the peer's MPA request or reply is malformed or asks for
	// what ustack does not do (markers, no CRC, another revision).
	ErrMPA = errors.New("qp: bad MPA frame")
	// ErrRejected: the peer rejected the connection. The RejectError
	// holding it carries the peer's private data.
	ErrRejected = errors.New("qp: connection rejected")
	// ErrCQOverflow: a completion queue filled up; the queue pairs that
	// lost completions to it moved to the error state.
	ErrCQOverflow = errors.New("qp: completion queue overflow")
	// ErrRemoteAccess: the peer answered with a Terminate reporting a
	// protection error (bad STag, bounds, rights).
	ErrRemoteAccess = errors.New("qp: remote access error")
	// ErrRemoteOp: the peer answered with a Terminate for another reason
	// (no receive posted, a malformed message, a CRC error).
	ErrRemoteOp = errors.New("qp: remote operation error")
	// ErrProtocol: the peer broke the protocol; this end sent a
	// Terminate and closed the connection.
	ErrProtocol = errors.New("qp: protocol error from peer")
	// ErrClosed: the queue pair or its connection was closed.
	ErrClosed = errors.New("qp: closed")
	// ErrBusy: the region is still used by a queue pair or the object
	// still has dependents.
	ErrBusy = errors.New("qp: resource busy")
)

// RejectError is returned by Connect when the peer rejects the
// connection.
type RejectError struct {
	// PrivateData is the private data of the peer's reject.
	PrivateData []byte
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("qp: connection rejected (%d bytes of private data)", len(e.PrivateData))
}

// Is makes errors.Is(err, ErrRejected) true.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

// TerminateError is a queue pair's error after a Terminate, received or
// sent.
type TerminateError struct {
	// Layer, EType and Code are the Terminate's fields (RFC 5040 §4.8):
	// layer 0 RDMAP, 1 DDP, 2 MPA.
	Layer, EType, Code uint8
	// Sent is true when this end sent the Terminate (the peer broke the
	// protocol or violated access), false when the peer sent it.
	Sent bool
}

func (e *TerminateError) Error() string {
	dir := "received"
	if e.Sent {
		dir = "sent"
	}
	return fmt.Sprintf("qp: terminate %s: %v", dir, term(e.Layer, e.EType, e.Code))
}

// Is matches ErrRemoteAccess or ErrRemoteOp for a received Terminate, and
// ErrProtocol for a sent one.
func (e *TerminateError) Is(target error) bool {
	if e.Sent {
		return target == ErrProtocol
	}
	if term(e.Layer, e.EType, e.Code).remoteAccess() {
		return target == ErrRemoteAccess
	}
	return target == ErrRemoteOp
}

func terminateError(c termCode, sent bool) error {
	return &TerminateError{Layer: c.layer(), EType: c.etype(), Code: c.code(), Sent: sent}
}
