package stack

import "github.com/ustack-dev/ustack/stack/internal/link"

// The owned fast path's side of a handler's stream (link.Owner): while
// the worker carries the connection (link.Owned), the stream's writes go
// into the connection's send ring and what arrives goes to OnTraffic from
// the frame. Everything else (a close, bytes the ring cannot take) hands
// the connection back to netstack first (disown).

// streamOwner is a Stream as the owned fast path sees it: its lock, and
// the calls that carry the connection. A type of its own, so that Stream's
// API does not grow these methods.
type streamOwner Stream

func (o *streamOwner) Lock()         { o.mu.Lock() }
func (o *streamOwner) Unlock()       { o.mu.Unlock() }
func (o *streamOwner) TryLock() bool { return o.mu.TryLock() }

// Ownable reports whether the stream's side is quiet: nothing written and
// held back, no Wake or AsyncWrite pending, no close under way.
func (o *streamOwner) Ownable() bool {
	s := (*Stream)(o)
	return !s.ended && !s.closing && !s.closed && len(s.pending) == 0 && !s.wake.Load() && !s.hasAsync.Load()
}

// Owned records who carries the connection: o, or netstack (nil).
func (o *streamOwner) Owned(w *link.Owned) { o.own = w }

// Begin admits every segment: the handler takes bytes on the worker,
// under the stream's lock.
func (o *streamOwner) Begin() bool { return true }

// End has nothing to do: the handler answered during Traffic.
func (o *streamOwner) End() {}

// Traffic gives the handler bytes the owned fast path received.
func (o *streamOwner) Traffic(b []byte) {
	s := (*Stream)(o)
	s.st.streamDirect.Add(uint64(len(b)))
	s.onData(b)
	s.finish()
}

// disown hands the connection back to netstack if the owned fast path
// carries it. Under the stream's lock.
func (s *Stream) disown(reason int) {
	if s.own != nil {
		s.own.Demote(reason)
	}
}
