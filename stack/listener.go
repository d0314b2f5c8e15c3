package stack

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/adapters/gonet"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// Listen announces on the stack's addresses: network is "tcp", "tcp4" or
// "tcp6"; address is "ip:port" or ":port" (port 0 picks one). With no IP,
// "tcp" listens on both families when the stack has both. The port is
// added to the XDP program's owned table for as long as the listener or
// any connection it accepted is open.
func (s *Stack) Listen(network, address string) (net.Listener, error) {
	ep, wq, keys, err := s.listen(network, address)
	if err != nil {
		return nil, err
	}
	return &listener{TCPListener: gonet.NewTCPListener(s.ns, wq, ep), s: s, ep: ep, wq: wq, keys: keys}, nil
}

// listen makes a listening TCP endpoint on address, its ports owned (for
// Listen and ListenHandler).
func (s *Stack) listen(network, address string) (tcpip.Endpoint, *waiter.Queue, []portKey, error) {
	ep, wq, keys, err := s.bind("listen", network, address, tcp.ProtocolNumber)
	if err != nil {
		return nil, nil, nil, err
	}
	if terr := ep.Listen(4096); terr != nil {
		ep.Close()
		s.ports.releaseAll(keys)
		return nil, nil, nil, opError("listen", network, nil, goError(terr))
	}
	return ep, wq, keys, nil
}

// listener is a gonet listener whose accepted connections hold the
// listening port in the owned table until they have closed.
type listener struct {
	*gonet.TCPListener
	s      *Stack
	ep     tcpip.Endpoint
	wq     *waiter.Queue
	keys   []portKey
	once   sync.Once
	closed atomic.Bool
}

// Accept implements net.Listener. It accepts directly from the endpoint
// (as gonet does) so that the connection's endpoint is known.
func (l *listener) Accept() (net.Conn, error) {
	n, wq, err := l.ep.Accept(nil)
	if _, ok := err.(*tcpip.ErrWouldBlock); ok {
		entry, notify := l.s.ep.NewWakeEntry(waiter.ReadableEvents)
		l.wq.EventRegister(&entry)
		defer l.wq.EventUnregister(&entry)
		for {
			n, wq, err = l.ep.Accept(nil)
			if _, ok := err.(*tcpip.ErrWouldBlock); !ok {
				break
			}
			<-notify
		}
	}
	if err != nil {
		if l.closed.Load() {
			// As Go's own listeners say after Close.
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: net.ErrClosed}
		}
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: goError(err)}
	}
	if aerr := l.s.ports.acquireAll(l.keys); aerr != nil {
		n.Close()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: aerr}
	}
	return newTCPConn(l.s, wq, n, l.keys), nil
}

// Close implements net.Listener. Connections already accepted stay open.
func (l *listener) Close() error {
	l.closed.Store(true)
	err := l.TCPListener.Close()
	l.once.Do(func() { l.s.ports.releaseAll(l.keys) })
	return err
}
