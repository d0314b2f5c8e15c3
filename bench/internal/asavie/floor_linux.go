package asavie

import (
	"fmt"
	"time"

	"github.com/asavie/xdp"
	"github.com/ustack-dev/ustack/internal/reflector"
)

// Floor is a reflector on one asavie/xdp socket.
type Floor struct {
	reflector.Responder
	// Spin busy-polls; otherwise the floor sleeps 20µs when idle.
	Spin bool

	sock *xdp.Socket
}

// Open binds an asavie/xdp socket to queue of the interface with index
// ifindex (in the calling thread's namespace) with ring sizes and a frame
// count like the floor's. Put its FD in the steering program's XSKMAP.
func Open(ifindex, queue int) (*Floor, error) {
	s, err := xdp.NewSocket(ifindex, queue, &xdp.SocketOptions{
		NumFrames:              4096,
		FrameSize:              4096,
		FillRingNumDescs:       1024,
		CompletionRingNumDescs: 1024,
		RxRingNumDescs:         1024,
		TxRingNumDescs:         1024,
	})
	if err != nil {
		return nil, fmt.Errorf("asavie/xdp socket on ifindex %d queue %d: %w", ifindex, queue, err)
	}
	return &Floor{sock: s}, nil
}

// FD returns the socket's file descriptor.
func (f *Floor) FD() int { return f.sock.FD() }

// Close closes the socket and unmaps its UMEM.
func (f *Floor) Close() error { return f.sock.Close() }

// Run serves until stop is closed or limit passes, in the way asavie/xdp's
// examples drive a socket: fill what the fill ring has room for, take what
// was received, transmit the replies from the frames they arrived in.
func (f *Floor) Run(stop <-chan struct{}, limit time.Duration) {
	deadline := time.Now().Add(limit)
	tx := make([]xdp.Desc, 0, 64)
	for idle := 0; ; idle++ {
		if idle%256 == 0 && reflector.Done(stop, deadline) {
			return
		}
		if n := f.sock.NumCompleted(); n > 0 {
			f.sock.Complete(n)
		}
		if n := f.sock.NumFreeFillSlots(); n > 0 {
			f.sock.Fill(f.sock.GetDescs(n))
		}
		n := f.sock.NumReceived()
		if n == 0 {
			if !f.Spin {
				time.Sleep(20 * time.Microsecond)
			}
			continue
		}
		idle = 0
		tx = tx[:0]
		for _, d := range f.sock.Receive(min(n, 64)) {
			// Frames not sent back are free again after Receive: the
			// library's free map gets them back to the fill ring.
			if f.Handle(f.sock.GetFrame(d)) {
				tx = append(tx, d)
			}
		}
		if len(tx) > 0 {
			f.sock.Transmit(tx)
		}
	}
}
