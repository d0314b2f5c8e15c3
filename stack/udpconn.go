package stack

import (
	"sync"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/adapters/gonet"
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
