package stack

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/adapters/gonet"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/udp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// Dial connects to address ("ip:port") over network ("tcp", "tcp4",
// "tcp6", "udp", "udp4", "udp6") from the stack's address of the matching
// family.
func (s *Stack) Dial(network, address string) (net.Conn, error) {
	return s.DialContext(context.Background(), network, address)
}

// DialContext is Dial with a context that bounds connection setup.
func (s *Stack) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if s.isClosed() {
		return nil, opError("dial", network, nil, ErrClosed)
	}
	ap, err := parseHostPort(network, address)
	if err != nil {
		return nil, opError("dial", network, nil, err)
	}
	if !ap.Addr().IsValid() || ap.Addr().IsUnspecified() || ap.Port() == 0 {
		return nil, opError("dial", network, nil, fmt.Errorf("%w: %q needs an IP and a port", ErrAddress, address))
	}
	local, err := s.localFor(network, ap.Addr())
	if err != nil {
		return nil, opError("dial", network, nil, err)
	}
	if local.Is6() != ap.Addr().Is6() {
		return nil, opError("dial", network, nil, fmt.Errorf("%v does not match network %s", ap.Addr(), network))
	}
	transport := tcp.ProtocolNumber
	if network[:3] == "udp" {
		transport = udp.ProtocolNumber
	}
	// Bind first so the port is known and owned before the first packet
	// leaves: the answer (for TCP, the SYN-ACK) must come to ustack.
	ep, wq, keys, err := s.bind("dial", network, netip.AddrPortFrom(local, 0).String(), transport)
	if err != nil {
		return nil, err
	}
	if transport == udp.ProtocolNumber {
		raddr := net.UDPAddrFromAddrPort(ap)
		if terr := ep.Connect(fullAddr(ap)); terr != nil {
			ep.Close()
			s.ports.releaseAll(keys)
			return nil, opError("dial", network, raddr, goError(terr))
		}
		return &udpConn{UDPConn: gonet.NewUDPConn(wq, ep), s: s, keys: keys}, nil
	}
	raddr := net.TCPAddrFromAddrPort(ap)
	entry, notify := s.ep.NewWakeEntry(waiter.WritableEvents)
	wq.EventRegister(&entry)
	defer wq.EventUnregister(&entry)
	terr := ep.Connect(fullAddr(ap))
	if _, ok := terr.(*tcpip.ErrConnectStarted); ok {
		select {
		case <-ctx.Done():
			ep.Close()
			s.ports.releaseAfterClose(ep, keys)
			return nil, opError("dial", network, raddr, ctx.Err())
		case <-notify:
		}
		terr = ep.LastError()
	}
	if terr != nil {
		ep.Close()
		s.ports.releaseAfterClose(ep, keys)
		return nil, opError("dial", network, raddr, goError(terr))
	}
	return newTCPConn(s, wq, ep, keys), nil
}
