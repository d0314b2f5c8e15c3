package stack

import (
	"net"
	"sync"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/adapters/gonet"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/udp"
)

// udpConn is a gonet UDP socket that gives its port back on Close.
type udpConn struct {
	*gonet.UDPConn
	s    *Stack
	keys []portKey
	once sync.Once
}

// Close implements net.Conn.
func (c *udpConn) Close() error {
	err := c.UDPConn.Close()
	c.once.Do(func() { c.s.ports.releaseAll(c.keys) })
	return err
}

// ListenPacket opens a UDP socket on the stack's addresses: network is
// "udp", "udp4" or "udp6"; address "ip:port" or ":port". With no IP,
// "udp" covers both families when the stack has both.
func (s *Stack) ListenPacket(network, address string) (net.PacketConn, error) {
	ep, wq, keys, err := s.bind("listen", network, address, udp.ProtocolNumber)
	if err != nil {
		return nil, err
	}
	return &udpConn{UDPConn: gonet.NewUDPConn(wq, ep), s: s, keys: keys}, nil
}
