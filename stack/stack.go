package stack

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/stack/internal/faultio"
	"github.com/ustack-dev/ustack/stack/internal/link"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/arp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv4"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv6"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/icmp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/udp"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

const nicID tcpip.NICID = 1

// Stack is a netstack instance over AF_XDP (or, in tests, a memory wire).
// Its methods are safe for concurrent use.
type Stack struct {
	cfg   Config
	ns    *gstack.Stack
	ep    *link.Endpoint
	mw    middleware
	ports *portTable
	// streams are the open connections Handlers serve, for Close to end.
	streams closeSet
	addrs   []netip.Prefix

	closeMu  sync.Mutex
	closed   bool
	teardown []func() error // run in reverse by Close, after netstack's own

	// Set over AF_XDP only.
	prog *bpf.Program
	// xdpSyn has the steering program answer flooded listeners' SYNs
	// (synxdp.go); nil without.
	xdpSyn *xdpSyns

	// Bytes worker-read connections (PollOnWorker) were given: straight
	// from the receive frame by the fast path (placeDirect), and read
	// from the receive queue.
	pollDirect, pollQueued atomic.Uint64
	// Bytes handlers were given: straight from the frame (runDirect),
	// and read from the receive queue (serve).
	streamDirect, streamQueued atomic.Uint64
	// The bytes of the two kinds of consumer that went to the receive
	// queue, by why (tcp.FastConsumer.Left).
	pollLeft, streamLeft [tcp.NumFastLeft]atomic.Uint64
}

// newStack builds netstack over ios, one per queue. On error the caller
// still runs its own cleanups; newStack cleans up what it made.
func newStack(cfg Config, ios []frameIO, li linkInfo, owner portOwner) (*Stack, error) {
	lay, err := cfg.layout(li.mtu)
	if err != nil {
		return nil, err
	}
	ios, mw, err := wrapIO(ios, &cfg, li)
	if err != nil {
		return nil, err
	}
	ep := link.New(ios, link.Options{
		MTU: li.mtu, MAC: tcpip.LinkAddress(li.mac), PartialChecksums: li.partialChecksums,
		Poll: link.Poll(cfg.Poll), SpinBudget: cfg.SpinBudget, Pin: cfg.Pin, TrustRxChecksum: cfg.TrustRxChecksum,
		HandOffTCP: cfg.Debug.HandOffTCP, NoGRO: cfg.Debug.NoGRO, NoTxChecksum: cfg.Debug.NoTxChecksum, NoGSO: cfg.Debug.NoGSO, Trace: cfg.Trace,
		RxFrames: lay.rxFrames,
	})
	ns := gstack.New(gstack.Options{
		NetworkProtocols: []gstack.NetworkProtocolFactory{
			ipv4.NewProtocol,
			ipv6.NewProtocolWithOptions(ipv6.Options{
				// Our address is ours by configuration; the XDP
				// program already decides who owns it.
				DADConfigs: gstack.DADConfigurations{DupAddrDetectTransmits: 0},
			}),
			arp.NewProtocol,
		},
		TransportProtocols: []gstack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
		Clock:              cfg.clock,
	})
	s := &Stack{cfg: cfg, ns: ns, ep: ep, mw: mw, addrs: cfg.Addrs}
	if q, ok := ns.TransportProtocolInstance(tcp.ProtocolNumber).(link.SegmentQueuer); ok && !cfg.Debug.NoEarlyDemux {
		owned := !cfg.Debug.NoFastPath && !cfg.Debug.NetstackFastPath
		ep.SetOwned(owned, ns.Clock(), cfg.DelayedAck)
		if owned {
			// Segments a parked endpoint holds hand its connection
			// back (IP options, fragments: what early demux cannot
			// read). The stack was made with TCP, so this cannot fail.
			_ = tcp.SetHeldHook(ns, ep.HeldSegment)
		}
		ep.SetDemux(link.NewDemux(ns, nicID, q, !cfg.Debug.NoFastPath, ep.LinkAddress(), cfg.Addrs, cfg.Gateway4, cfg.Gateway6))
	}
	ns.SetDirectWrite(!cfg.Debug.NoFastPath)
	s.ports = newPortTable(owner)
	fail := func(err error) (*Stack, error) {
		ns.Close()
		ns.Wait()
		s.ports.close()
		return nil, err
	}
	sack := tcpip.TCPSACKEnabled(true)
	cc := tcpip.CongestionControlOption(cfg.CongestionControl)
	moderate := tcpip.TCPModerateReceiveBufferOption(true)
	// Closed connections leave the owned-ports table once out of these
	// states; keep them short so ports are not held long.
	timeWait := tcpip.TCPTimeWaitTimeoutOption(5 * time.Second)
	linger := tcpip.TCPLingerTimeoutOption(10 * time.Second)
	delack := tcpip.TCPDelayedAckOption(max(cfg.DelayedAck, 0))
	maxTW := tcpip.TCPMaxTimeWaitOption(max(cfg.MaxTimeWait, 0))
	cookies := tcpip.TCPAlwaysUseSynCookies(cfg.SynCookies == SynCookiesAlways)
	for _, o := range []tcpip.SettableTransportProtocolOption{
		&sack, &cc, &moderate, &timeWait, &linger, &delack, &maxTW, &cookies,
		&tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: cfg.TCPSendBuffer, Max: max(cfg.TCPSendBuffer, 4<<20)},
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: cfg.TCPReceiveBuffer, Max: max(cfg.TCPReceiveBuffer, 4<<20)},
	} {
		if err := ns.SetTransportProtocolOption(tcp.ProtocolNumber, o); err != nil {
			return fail(fmt.Errorf("set tcp option %T: %w", o, goError(err)))
		}
	}
	if err := ns.CreateNICWithOptions(nicID, ep, gstack.NICOptions{Name: cfg.Interface}); err != nil {
		return fail(fmt.Errorf("create nic: %w", goError(err)))
	}
	var routes []tcpip.Route
	for _, p := range cfg.Addrs {
		proto := ipv4.ProtocolNumber
		if p.Addr().Is6() {
			proto = ipv6.ProtocolNumber
		}
		pa := tcpip.ProtocolAddress{
			Protocol:          proto,
			AddressWithPrefix: tcpip.AddrFromSlice(p.Addr().AsSlice()).WithPrefix(),
		}
		pa.AddressWithPrefix.PrefixLen = p.Bits()
		if err := ns.AddProtocolAddress(nicID, pa, gstack.AddressProperties{}); err != nil {
			return fail(fmt.Errorf("add address %v: %w", p, goError(err)))
		}
		routes = append(routes, tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: nicID})
	}
	for _, gw := range []netip.Addr{cfg.Gateway4, cfg.Gateway6} {
		if !gw.IsValid() {
			continue
		}
		any := header4or6Any(gw)
		routes = append(routes, tcpip.Route{Destination: any, Gateway: tcpip.AddrFromSlice(gw.AsSlice()), NIC: nicID})
	}
	ns.SetRouteTable(routes)
	return s, nil
}

// UMEMSize returns the packet memory each queue maps and the kernel
// pins, in bytes (Config.UMEMSize, as laid out for the interface's MTU):
// the stack pins Queues times it in all.
func (s *Stack) UMEMSize() int { return s.cfg.UMEMSize }

// Close aborts every connection, stops the workers, and releases the
// sockets, UMEM and XDP program. It is safe to call more than once.
func (s *Stack) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closeMu.Unlock()
	// Abort endpoints while the workers and TX path still run, so peers
	// get their resets: the owned fast path's connections too, handed
	// back to netstack first (a parked endpoint ends without a segment).
	s.ep.DisownAll()
	s.ns.Close()
	s.ns.RemoveNIC(nicID)
	s.ns.Wait()
	errs := []error{s.ep.StopWorkers()}
	s.streams.closeAll()
	s.ports.close()
	for i := len(s.teardown) - 1; i >= 0; i-- {
		errs = append(errs, s.teardown[i]())
	}
	return errors.Join(errs...)
}

// SetFaults replaces the fault rates of every queue, for example to cut
// the link (Drop: 1) for a while and then restore it. The seeded
// generators carry on. The stack must have been configured with
// Config.Faults (its injectors are only in the data path then).
func (s *Stack) SetFaults(rx, tx FaultRates) error {
	if err := rx.validate("RX"); err != nil {
		return err
	}
	if err := tx.validate("TX"); err != nil {
		return err
	}
	if len(s.mw.faults) == 0 {
		return ErrNoFaults
	}
	for _, f := range s.mw.faults {
		f.SetRates(faultio.Rates(rx), faultio.Rates(tx))
	}
	return nil
}

func (s *Stack) isClosed() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.closed
}

// Addrs returns the addresses the stack owns.
func (s *Stack) Addrs() []netip.Prefix { return append([]netip.Prefix(nil), s.addrs...) }

// localFor returns the stack's address of the family network and remote
// call for, or an error if it has none.
func (s *Stack) localFor(network string, remote netip.Addr) (netip.Addr, error) {
	want6 := remote.IsValid() && remote.Is6() && !remote.Is4In6()
	switch network {
	case "tcp4", "udp4":
		want6 = false
	case "tcp6", "udp6":
		want6 = true
	}
	for _, p := range s.addrs {
		if p.Addr().Is6() == want6 {
			return p.Addr(), nil
		}
	}
	fam := "IPv4"
	if want6 {
		fam = "IPv6"
	}
	return netip.Addr{}, fmt.Errorf("stack has no %s address", fam)
}

func parseHostPort(network, address string) (netip.AddrPort, error) {
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return netip.AddrPort{}, net.UnknownNetworkError(network)
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q: %w", portStr, err)
	}
	if host == "" {
		return netip.AddrPortFrom(netip.Addr{}, uint16(port)), nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: host %q is not an IP address (ustack does no name resolution)", ErrAddress, host)
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

func fullAddr(ap netip.AddrPort) tcpip.FullAddress {
	fa := tcpip.FullAddress{NIC: nicID, Port: ap.Port()}
	if ap.Addr().IsValid() && !ap.Addr().IsUnspecified() {
		fa.Addr = tcpip.AddrFromSlice(ap.Addr().AsSlice())
	}
	return fa
}

func netProto(a netip.Addr) tcpip.NetworkProtocolNumber {
	if a.Is6() {
		return ipv6.ProtocolNumber
	}
	return ipv4.ProtocolNumber
}

func opError(op, network string, addr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: network, Addr: addr, Err: err}
}

// bind creates an endpoint of transport bound to address and owns its
// port on every address it covers.
func (s *Stack) bind(op, network, address string, transport tcpip.TransportProtocolNumber) (tcpip.Endpoint, *waiter.Queue, []portKey, error) {
	if s.isClosed() {
		return nil, nil, nil, opError(op, network, nil, ErrClosed)
	}
	kind, proto := "tcp", bpf.TCP
	if transport == udp.ProtocolNumber {
		kind, proto = "udp", bpf.UDP
	}
	ap, err := parseHostPort(network, address)
	if err == nil && network[:3] != kind {
		err = net.UnknownNetworkError(network)
	}
	if err != nil {
		return nil, nil, nil, opError(op, network, nil, err)
	}
	// Which of the stack's addresses the socket covers.
	var covered []netip.Addr
	bindAddr := ap.Addr()
	if bindAddr.IsValid() && !bindAddr.IsUnspecified() {
		if !s.owns(bindAddr) {
			return nil, nil, nil, opError(op, network, nil, fmt.Errorf("%v is not an address of this stack: %w", bindAddr, syscall.EADDRNOTAVAIL))
		}
		covered = []netip.Addr{bindAddr}
	} else {
		for _, p := range s.addrs {
			if is6 := p.Addr().Is6(); network == kind || (network == kind+"6") == is6 {
				covered = append(covered, p.Addr())
			}
		}
		if len(covered) == 0 {
			return nil, nil, nil, opError(op, network, nil, fmt.Errorf("stack has no address for %s", network))
		}
		bindAddr = netip.Addr{}
	}
	// A wildcard socket covering IPv6 is an IPv6 endpoint, dual-stack
	// when it also covers IPv4.
	family := covered[0]
	for _, a := range covered {
		if a.Is6() {
			family = a
		}
	}
	var wq waiter.Queue
	ep, terr := s.ns.NewEndpoint(transport, netProto(family), &wq)
	if terr != nil {
		return nil, nil, nil, opError(op, network, nil, goError(terr))
	}
	if family.Is6() {
		ep.SocketOptions().SetV6Only(len(covered) == 1)
	}
	if terr := ep.Bind(fullAddr(netip.AddrPortFrom(bindAddr, ap.Port()))); terr != nil {
		ep.Close()
		return nil, nil, nil, opError(op, network, nil, goError(terr))
	}
	bound, _ := ep.GetLocalAddress()
	var keys []portKey
	for _, a := range covered {
		keys = append(keys, portKey{addr: a, proto: proto, port: bound.Port})
	}
	if err := s.ports.acquireAll(keys); err != nil {
		ep.Close()
		return nil, nil, nil, opError(op, network, nil, err)
	}
	return ep, &wq, keys, nil
}

func (s *Stack) owns(a netip.Addr) bool {
	for _, p := range s.addrs {
		if p.Addr() == a {
			return true
		}
	}
	return false
}

// header4or6Any is the default-route subnet of gw's family.
func header4or6Any(gw netip.Addr) tcpip.Subnet {
	if gw.Is4() {
		return header.IPv4EmptySubnet
	}
	return header.IPv6EmptySubnet
}

// closeSet is what Close must end beside netstack's endpoints: the
// streams Handlers serve, each with the function that ends it.
type closeSet struct {
	mu     sync.Mutex
	set    map[any]func()
	closed bool
}

// add adds k, ended by end, unless the set is closed.
func (cs *closeSet) add(k any, end func()) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return false
	}
	if cs.set == nil {
		cs.set = map[any]func(){}
	}
	cs.set[k] = end
	return true
}

func (cs *closeSet) remove(k any) {
	cs.mu.Lock()
	delete(cs.set, k)
	cs.mu.Unlock()
}

// closeAll closes the set and ends what it holds; called once the
// workers have stopped.
func (cs *closeSet) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	set := cs.set
	cs.set = nil
	cs.mu.Unlock()
	for _, end := range set {
		end()
	}
}
