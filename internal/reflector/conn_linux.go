package reflector

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/xsk"
)

// Conn is one UDP flow on a raw AF_XDP socket, with no stack: the packet
// code of the floor at a client's end (the benchmark's floor-floor). It
// sends each Write as one datagram and returns one datagram's payload per
// Read, spinning on the RX ring. It is a net.Conn for one goroutine at a
// time; deadlines bound reads only.
type Conn struct {
	*endpoint
	local    netip.AddrPort
	remote   netip.AddrPort
	rx       []xsk.Desc // received, not yet read: rx[next:]
	next     int
	deadline time.Time
}

var _ net.Conn = (*Conn)(nil)

// DialTimeout bounds Dial's ARP resolution.
const DialTimeout = 2 * time.Second

// ReadTimeout bounds a Read without a deadline: on a local link a reply
// missing that long is lost.
const ReadTimeout = 5 * time.Second

// Dial opens an AF_XDP socket on queue 0 of iface (in the calling
// thread's namespace), steers local's ARP and UDP port to it with
// ustack's XDP program in native mode, and resolves remote's hardware
// address with ARP.
func Dial(iface string, local, remote netip.AddrPort) (*Conn, error) {
	e, err := openEndpoint(iface, local.Addr(), []bpf.OwnedPort{{Addr: local.Addr(), Proto: bpf.UDP, Port: local.Port()}}, remote.Addr(), false)
	if err != nil {
		return nil, err
	}
	return &Conn{endpoint: e, local: local, remote: remote, rx: make([]xsk.Desc, 0, 64)}, nil
}

// Write sends p as one datagram: headers and payload written into a
// transmit frame, both checksums computed, one kick.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) > MaxUDPPayload(c.mtu) {
		return 0, fmt.Errorf("write %d bytes: more than one %d-byte MTU datagram holds", len(p), c.mtu)
	}
	c.sock.Complete()
	a, ok := c.sock.Alloc()
	if !ok {
		return 0, errors.New("write: no free transmit frame")
	}
	n := writeUDP4(c.umem.Frame(a), c.peer, c.mac, c.local, c.remote, p)
	c.one[0] = xsk.Desc{Addr: a, Len: uint32(n)}
	sent, err := c.sock.Transmit(c.one[:])
	if sent == 0 {
		c.sock.Free(a)
		if err == nil {
			err = errors.New("transmit ring full")
		}
		return 0, fmt.Errorf("write: %w", err)
	}
	return len(p), nil
}

// Read copies the payload of the next datagram from the remote address
// into p (a longer one is cut short, as UDP does). It spins on the RX
// ring until one arrives, the deadline passes or ReadTimeout does.
func (c *Conn) Read(p []byte) (int, error) {
	end := c.deadline
	if end.IsZero() {
		end = time.Now().Add(ReadTimeout)
	}
	for i := 0; ; i++ {
		for c.next < len(c.rx) {
			d := c.rx[c.next]
			c.next++
			u, ok := parseUDP4(c.umem.Data(d))
			n := 0
			if ok && u.src == c.remote && u.dst == c.local {
				n = copy(p, u.payload)
			}
			c.one[0] = d
			c.sock.Recycle(c.one[:])
			if ok && u.src == c.remote && u.dst == c.local {
				return n, nil
			}
		}
		m := c.sock.Receive(c.rx[:cap(c.rx)])
		c.rx, c.next = c.rx[:m], 0
		if m == 0 {
			c.sock.Refill()
			if i%1024 == 0 && time.Now().After(end) {
				return 0, os.ErrDeadlineExceeded
			}
		}
	}
}

// Close releases the socket, the XDP program and the UMEM.
func (c *Conn) Close() error {
	c.close()
	return nil
}

// LocalAddr returns the local UDP address.
func (c *Conn) LocalAddr() net.Addr { return net.UDPAddrFromAddrPort(c.local) }

// RemoteAddr returns the remote UDP address.
func (c *Conn) RemoteAddr() net.Addr { return net.UDPAddrFromAddrPort(c.remote) }

// SetDeadline sets the read deadline (writes never block).
func (c *Conn) SetDeadline(t time.Time) error { c.deadline = t; return nil }

// SetReadDeadline sets the read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { c.deadline = t; return nil }

// SetWriteDeadline does nothing: writes never block.
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }
