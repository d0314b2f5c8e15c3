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

// endpoint is the client end every floor client shares: an AF_XDP socket
// on queue 0 of an interface, ustack's XDP program steering one address's
// ARP and some of its ports to it, and the peer's hardware address.
type endpoint struct {
	sock      *xsk.Socket
	umem      *xsk.UMEM
	prog      *bpf.Program
	mac, peer net.HardwareAddr
	mtu       int
	one       [1]xsk.Desc
}

// openEndpoint opens an AF_XDP socket on queue 0 of iface (in the calling
// thread's namespace), steers local's ARP and ports to it with ustack's
// XDP program in native mode, and resolves remote's hardware address with
// ARP. With multiBuffer the socket takes packets larger than a frame as
// chains. On error nothing is left behind.
func openEndpoint(iface string, local netip.Addr, ports []bpf.OwnedPort, remote netip.Addr, multiBuffer bool) (_ *endpoint, err error) {
	return openEndpointRx(iface, local, ports, remote, multiBuffer, 0)
}

// openEndpointRx is openEndpoint with rx receive frames, and RX and fill
// rings of that size (a power of two; 0: the default, 1024).
func openEndpointRx(iface string, local netip.Addr, ports []bpf.OwnedPort, remote netip.Addr, multiBuffer bool, rx uint32) (_ *endpoint, err error) {
	if !local.Is4() || !remote.Is4() {
		return nil, fmt.Errorf("reflector client %v → %v: IPv4 only", local, remote)
	}
	ifc, err := xsk.LookupInterface(iface)
	if err != nil {
		return nil, err
	}
	e := &endpoint{mac: ifc.MAC, mtu: ifc.MTU}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	frames := uint32(4096)
	if rx > 0 {
		frames = rx + xsk.DefaultRingSize // and the default TX pool
	}
	if e.umem, err = xsk.NewUMEM(xsk.UMEMConfig{FrameCount: frames}); err != nil {
		return nil, err
	}
	if e.sock, err = xsk.Open(e.umem, xsk.Config{Interface: iface, MultiBuffer: multiBuffer, RxSize: rx, FillSize: rx}); err != nil {
		return nil, err
	}
	e.prog, _, err = bpf.Setup(bpf.Steering{Ifindex: ifc.Index, Mode: bpf.AttachNative, Sockets: []int{e.sock.FD()},
		Owned: []bpf.Owned{{Addr: local, Flags: bpf.OwnNeigh}}, Ports: ports})
	if err != nil {
		return nil, fmt.Errorf("steer %s to the socket: %w", iface, err)
	}
	if e.peer, err = e.resolve(local, remote); err != nil {
		return nil, err
	}
	return e, nil
}

// resolve asks for remote's hardware address, every 100ms until
// DialTimeout.
func (e *endpoint) resolve(local, remote netip.Addr) (net.HardwareAddr, error) {
	descs := make([]xsk.Desc, 64)
	u := e.umem
	end, next := time.Now().Add(DialTimeout), time.Time{}
	for time.Now().Before(end) {
		if time.Now().After(next) {
			e.sock.Complete()
			a, ok := e.sock.Alloc()
			if !ok {
				return nil, errors.New("arp: no transmit frame")
			}
			n := writeARPRequest(u.Frame(a), e.mac, local, remote)
			e.one[0] = xsk.Desc{Addr: a, Len: uint32(n)}
			if sent, err := e.sock.Transmit(e.one[:]); err != nil || sent == 0 {
				e.sock.Free(a)
			}
			next = time.Now().Add(100 * time.Millisecond)
		}
		m := e.sock.Receive(descs)
		for _, d := range descs[:m] {
			if mac, ok := parseARPReply(u.Data(d), remote); ok {
				e.sock.Recycle(descs[:m])
				return mac, nil
			}
		}
		e.sock.Recycle(descs[:m])
		if m == 0 {
			e.sock.Refill()
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil, fmt.Errorf("arp: no reply from %v in %v", remote, DialTimeout)
}

// close releases the XDP program, the socket and the UMEM.
func (e *endpoint) close() {
	if e.prog != nil {
		e.prog.Close()
		e.prog = nil
	}
	if e.sock != nil {
		e.sock.Close()
		e.sock = nil
	}
	if e.umem != nil {
		e.umem.Close()
		e.umem = nil
	}
}

// flow is one flow of an endpoint as a net.Conn for one goroutine at a
// time, what Conn (UDP) and TCPConn (TCP-shaped) share: its addresses,
// the frames received and not yet looked at, and the read deadline;
// writes never block.
type flow struct {
	*endpoint
	local, remote netip.AddrPort
	rx            []xsk.Desc // received, not yet looked at: rx[next:]
	next          int
	deadline      time.Time
}

func newFlow(e *endpoint, local, remote netip.AddrPort) flow {
	return flow{endpoint: e, local: local, remote: remote, rx: make([]xsk.Desc, 0, 64)}
}

// txFrame takes a free transmit frame for a write: its address and bytes.
func (f *flow) txFrame() (uint64, []byte, error) {
	f.sock.Complete()
	a, ok := f.sock.Alloc()
	if !ok {
		return 0, nil, errors.New("write: no free transmit frame")
	}
	return a, f.umem.Frame(a), nil
}

// send transmits the first n bytes of transmit frame a, one kick; the
// frame goes back to the free list if the ring takes it not.
func (f *flow) send(a uint64, n int) error {
	f.one[0] = xsk.Desc{Addr: a, Len: uint32(n)}
	sent, err := f.sock.Transmit(f.one[:])
	if sent == 0 {
		f.sock.Free(a)
		if err == nil {
			err = errors.New("transmit ring full")
		}
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// readEnd is when a Read that starts now gives up: the deadline, or
// ReadTimeout from now.
func (f *flow) readEnd() time.Time {
	if f.deadline.IsZero() {
		return time.Now().Add(ReadTimeout)
	}
	return f.deadline
}

// poll takes the next batch off the RX ring into rx. Finding none, it
// tops up the fill ring and, every 1024th poll i, fails once end has
// passed.
func (f *flow) poll(i int, end time.Time) error {
	m := f.sock.Receive(f.rx[:cap(f.rx)])
	f.rx, f.next = f.rx[:m], 0
	if m == 0 {
		f.sock.Refill()
		if i%1024 == 0 && time.Now().After(end) {
			return os.ErrDeadlineExceeded
		}
	}
	return nil
}

// Close releases the socket, the XDP program and the UMEM.
func (f *flow) Close() error {
	f.close()
	return nil
}

// SetDeadline sets the read deadline (writes never block).
func (f *flow) SetDeadline(t time.Time) error { f.deadline = t; return nil }

// SetReadDeadline sets the read deadline.
func (f *flow) SetReadDeadline(t time.Time) error { f.deadline = t; return nil }

// SetWriteDeadline does nothing: writes never block.
func (f *flow) SetWriteDeadline(time.Time) error { return nil }
