package reflector

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/ustack-dev/ustack/bpf"
)

// Conn is one UDP flow on a raw AF_XDP socket, with no stack: the packet
// code of the floor at a client's end (the benchmark's floor-floor). It
// sends each Write as one datagram and returns one datagram's payload per
// Read, spinning on the RX ring. It is a net.Conn for one goroutine at a
// time; deadlines bound reads only.
type Conn struct {
	flow
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
	return &Conn{flow: newFlow(e, local, remote)}, nil
}

// Write sends p as one datagram: headers and payload written into a
// transmit frame, both checksums computed, one kick.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) > MaxUDPPayload(c.mtu) {
		return 0, fmt.Errorf("write %d bytes: more than one %d-byte MTU datagram holds", len(p), c.mtu)
	}
	a, fr, err := c.txFrame()
	if err != nil {
		return 0, err
	}
	if err := c.send(a, writeUDP4(fr, c.peer, c.mac, c.local, c.remote, p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Read copies the payload of the next datagram from the remote address
// into p (a longer one is cut short, as UDP does). It spins on the RX
// ring until one arrives, the deadline passes or ReadTimeout does.
func (c *Conn) Read(p []byte) (int, error) {
	end := c.readEnd()
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
		if err := c.poll(i, end); err != nil {
			return 0, err
		}
	}
}

// LocalAddr returns the local UDP address.
func (c *Conn) LocalAddr() net.Addr { return net.UDPAddrFromAddrPort(c.local) }

// RemoteAddr returns the remote UDP address.
func (c *Conn) RemoteAddr() net.Addr { return net.UDPAddrFromAddrPort(c.remote) }
