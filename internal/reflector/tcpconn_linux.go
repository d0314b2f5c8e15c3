package reflector

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/offload"
	"github.com/ustack-dev/ustack/xsk"
)

// TCPConn is the TCP-shaped floor's client: one TCP flow on a raw AF_XDP
// socket, with the per-segment work of a TCP and none of its state
// machine. Each Write is one segment (ACK|PSH) cut into a fresh transmit
// frame from a header template, with the timestamp option and the TCP
// checksum computed in the copy; its sequence number advances by the
// bytes sent, its ACK is the peer's last sequence number plus length.
// Read verifies each segment's checksum and copies its payload out.
// There is no handshake: a Floor's stateless TCP echo answers it as it
// answers an established connection. Against a Floor with Fresh set it
// is floor-floor-tcp, the least a TCP-shaped round trip costs on raw
// AF_XDP. It is a net.Conn for one goroutine at a time; deadlines bound
// reads only. Nothing is retransmitted.
type TCPConn struct {
	flow
	tmpl tcpTemplate
	// sndNxt is the next byte's sequence number, rcvNxt the peer's,
	// tsRecent its last TSval.
	sndNxt, rcvNxt, tsRecent uint32
	start                    time.Time // the timestamp clock's origin
	// unread is the rest of a segment a Read cut short, in the frame
	// held (owned until it is read).
	unread []byte
	held   [1]xsk.Desc

	// BadChecksums counts received segments from the peer whose
	// checksum failed (and were dropped).
	BadChecksums atomic.Int64
}

var _ net.Conn = (*TCPConn)(nil)

// DialTCP opens an AF_XDP socket on queue 0 of iface (in the calling
// thread's namespace), steers local's ARP and TCP port to it with
// ustack's XDP program in native mode, resolves remote's hardware address
// with ARP and returns a TCPConn from local to remote. It sends nothing
// else: the connection is taken as established.
func DialTCP(iface string, local, remote netip.AddrPort) (*TCPConn, error) {
	e, err := openEndpoint(iface, local.Addr(), []bpf.OwnedPort{{Addr: local.Addr(), Proto: bpf.TCP, Port: local.Port()}}, remote.Addr(), false)
	if err != nil {
		return nil, err
	}
	c := &TCPConn{flow: newFlow(e, local, remote), start: time.Now()}
	c.tmpl.init(e.peer, e.mac, local, remote, true)
	isn := uint32(c.start.UnixNano())
	c.sndNxt, c.rcvNxt = isn, isn // the floor's echo numbers its bytes as ours
	return c, nil
}

// MaxSegment returns the largest Write a TCPConn on an interface of mtu
// bytes takes: one segment with the timestamp option (1448 at MTU 1500).
func MaxSegment(mtu int) int { return mtu - ipv4Len - tcpLen - tcpTSLen }

// Write sends p as one segment: the template's headers and p written into
// a fresh transmit frame, the TCP checksum computed in the copy, one
// kick.
func (c *TCPConn) Write(p []byte) (int, error) {
	if len(p) > MaxSegment(c.mtu) {
		return 0, fmt.Errorf("write %d bytes: more than one %d-byte MTU segment holds", len(p), c.mtu)
	}
	if len(p) == 0 {
		return 0, nil
	}
	a, fr, err := c.txFrame()
	if err != nil {
		return 0, err
	}
	tsval := uint32(time.Since(c.start)/time.Millisecond) + 1
	if err := c.send(a, c.tmpl.write(fr, c.sndNxt, c.rcvNxt, tcpAck|tcpPsh, tsval, c.tsRecent, p)); err != nil {
		return 0, err
	}
	c.sndNxt += uint32(len(p))
	return len(p), nil
}

// Read copies the payload of the next segment from the remote address
// into p; what does not fit is returned by the next Reads, as TCP's byte
// stream. Segments with a bad checksum, and those with no payload, are
// dropped. It spins on the RX ring until a segment arrives, the deadline
// passes or ReadTimeout does.
func (c *TCPConn) Read(p []byte) (int, error) {
	if len(c.unread) > 0 {
		n := copy(p, c.unread)
		c.unread = c.unread[n:]
		if len(c.unread) == 0 {
			c.sock.Recycle(c.held[:])
		}
		return n, nil
	}
	end := c.readEnd()
	for i := 0; ; i++ {
		for c.next < len(c.rx) {
			d := c.rx[c.next]
			c.next++
			c.held[0] = d
			f := c.umem.Data(d)
			s, ok := parseTCP4(f)
			if !ok || s.src != c.remote || s.dst != c.local || len(s.payload) == 0 {
				c.sock.Recycle(c.held[:])
				continue
			}
			// The checksum is verified in the copy out: one pass over
			// the payload. A segment p cannot hold whole is verified
			// first.
			n, ok := 0, false
			if len(p) >= len(s.payload) {
				n, ok = copyVerified(p, f, s)
			} else if v := offload.Verify(f[:s.frameLen]); v == offload.Valid || v == offload.Partial {
				n, ok = copy(p, s.payload), true
			}
			if !ok {
				c.BadChecksums.Add(1)
				c.sock.Recycle(c.held[:])
				continue
			}
			if end := s.seq + uint32(len(s.payload)); int32(end-c.rcvNxt) > 0 {
				c.rcvNxt = end
			}
			if s.ts {
				c.tsRecent = s.tsval
			}
			if n < len(s.payload) {
				c.unread = s.payload[n:]
				return n, nil
			}
			c.sock.Recycle(c.held[:])
			return n, nil
		}
		if err := c.poll(i, end); err != nil {
			return 0, err
		}
	}
}

// LocalAddr returns the local TCP address.
func (c *TCPConn) LocalAddr() net.Addr { return net.TCPAddrFromAddrPort(c.local) }

// RemoteAddr returns the remote TCP address.
func (c *TCPConn) RemoteAddr() net.Addr { return net.TCPAddrFromAddrPort(c.remote) }

// copyVerified copies s's payload (of frame f) into p, which holds it,
// checking the IPv4 header's and the TCP checksum in the same pass. A
// segment whose checksum holds only the pseudo-header's sum (a veth peer
// with checksum offload) passes too.
func copyVerified(p, f []byte, s tcp4) (int, bool) {
	ip := f[ethLen:s.frameLen]
	ihl := int(ip[0]&0xf) * 4
	if offload.Fold(offload.Sum(ip[:ihl], 0)) != 0xffff {
		return 0, false
	}
	tcp := ip[ihl:]
	hdr := tcp[:len(tcp)-len(s.payload)]
	n, acc := offload.CopySum(p, s.payload, offload.PseudoHeader4(ip[12:16], ip[16:20], protoTCP, len(tcp)))
	if offload.Fold(offload.Sum(hdr, acc)) == 0xffff {
		return n, true
	}
	return n, offload.Verify(f[:s.frameLen]) == offload.Partial
}
