//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ustack-dev/ustack/bench/internal/asavie"
	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/echohandler"
	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/qp"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/ustack-dev/ustack/xsk"
	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/link/xdp"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// servedStack is the ustack server's stack, whose latency breakdown the
// parent asks for (a server child runs one contender).
var servedStack *stack.Stack

// servedFloor is the floor server's, whose sink counters the parent asks
// for.
var servedFloor *reflector.Floor

// startServer starts the echo server (on port), discard server (port+1),
// source server (port+2) and queue-pair server (port+3) of a contender in
// the current namespace and returns a function that stops them and
// releases everything, and the mode the XDP program was attached in (""
// for the kernel contenders, which attach none).
func startServer(contender, iface, poll string, port uint16, upstream, handler bool, offload string, delay time.Duration, fresh bool) (stop func(), xdpMode string, err error) {
	kernelAddr := netip.AddrPortFrom(vethtest.UstackHostIPv4, port)
	ustackAddr := netip.AddrPortFrom(vethtest.UstackIPv4, port)
	switch contender {
	case "kernel", "kernel-busypoll":
		lns, err := listenServers(net.Listen, kernelAddr)
		if err != nil {
			return nil, "", err
		}
		if contender == "kernel" {
			go echo.ServeTCP(lns[0])
			go echo.ServeDiscard(lns[1])
		} else {
			go serveBusyPoll(lns[0], false)
			go serveBusyPoll(lns[1], true)
		}
		go echo.ServeSource(lns[2])
		go serveQP(lns[3])
		return func() { closeAll(lns) }, "", nil
	case "ustack":
		p, err := stack.ParsePollPolicy(poll)
		if err != nil {
			return nil, "", err
		}
		cfg := stack.Config{
			Interface: iface,
			Addrs:     []netip.Prefix{netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4)},
			Poll:      p,
			Trace:     true,
		}
		if upstream {
			cfg.Debug.HandOffTCP, cfg.DelayedAck = true, -1
		}
		// A lab knob for before/after runs of the fast path in one
		// session: the contenders' servers run with
		// Config.Debug.NoFastPath.
		if os.Getenv("USTACK_BENCH_NOFASTPATH") != "" {
			cfg.Debug.NoFastPath = true
		}
		// Another: Config.SynCookies ("auto" or "always").
		if v := os.Getenv("USTACK_BENCH_SYNCOOKIES"); v != "" {
			if cfg.SynCookies, err = stack.ParseSynCookieMode(v); err != nil {
				return nil, "", fmt.Errorf("USTACK_BENCH_SYNCOOKIES: %w", err)
			}
		}
		// And Config.UMEMSize in MiB (unset: the default).
		if v := os.Getenv("USTACK_BENCH_UMEM_MIB"); v != "" {
			mib, err := strconv.Atoi(v)
			if err != nil || mib <= 0 {
				return nil, "", fmt.Errorf("USTACK_BENCH_UMEM_MIB=%q: not a positive number of MiB", v)
			}
			cfg.UMEMSize = mib << 20
		}
		switch offload {
		case "":
		case "no-gso":
			cfg.Debug.NoGSO = true
		case "no-tx-checksum":
			cfg.Debug.NoTxChecksum = true
		case "no-gro":
			cfg.Debug.NoGRO = true
		case "netstack-fast-path":
			cfg.Debug.NetstackFastPath = true
		default:
			return nil, "", fmt.Errorf("unknown offload setting %q", offload)
		}
		s, err := stack.New(cfg)
		if err != nil {
			return nil, "", err
		}
		servedStack = s
		lns, err := listenServers(s.Listen, ustackAddr)
		if err != nil {
			s.Close()
			return nil, "", err
		}
		if handler {
			// The echo and discard servers on the handler API, in
			// place of the net.Conn ones on the same ports.
			closeAll(lns[:2])
			hecho, err := s.ListenHandler("tcp", ustackAddr.String(), echohandler.Echo{})
			if err != nil {
				closeAll(lns[2:])
				s.Close()
				return nil, "", err
			}
			hdiscard, err := s.ListenHandler("tcp", netip.AddrPortFrom(ustackAddr.Addr(), port+1).String(), echohandler.Discard{})
			if err != nil {
				hecho.Close()
				closeAll(lns[2:])
				s.Close()
				return nil, "", err
			}
			go echo.ServeSource(lns[2])
			go serveQP(lns[3])
			return func() { hecho.Close(); hdiscard.Close(); closeAll(lns[2:]); s.Close() }, s.Stats().AttachMode.String(), nil
		}
		go echo.ServeTCP(lns[0])
		go echo.ServeDiscard(lns[1])
		go echo.ServeSource(lns[2])
		go serveQP(lns[3])
		return func() { closeAll(lns); s.Close() }, s.Stats().AttachMode.String(), nil
	case "kernel-gnet":
		stop, err := startGnet(kernelAddr)
		return stop, "", err
	case "gvisor-xdp":
		stop, err := startGVisorXDP(iface, ustackAddr)
		return stop, bpf.AttachNative.String(), err
	case "floor":
		stop, err := startFloor(iface, port, delay, fresh)
		return stop, bpf.AttachNative.String(), err
	case "floor-asavie":
		stop, err := startFloorAsavie(iface, port)
		return stop, bpf.AttachNative.String(), err
	}
	return nil, "", fmt.Errorf("unknown contender %q", contender)
}

// startGVisorXDP runs gVisor's netstack over gVisor's own AF_XDP link
// endpoint (pkg/tcpip/link/xdp), the incumbent a Go user would pick today.
// ustack's XDP program steers the address to its socket, since gVisor's
// endpoint brings none of its own.
func startGVisorXDP(iface string, addr netip.AddrPort) (_ func(), err error) {
	ifc, err := xsk.LookupInterface(iface)
	if err != nil {
		return nil, err
	}
	u := &undoList{}
	defer func() {
		if err != nil {
			u.run()
		}
	}()
	var fd int
	var ep gstack.LinkEndpoint
	err = whileBusy(func() error {
		if fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW, 0); err != nil {
			return err
		}
		ep, err = xdp.New(&xdp.Options{
			FD:             fd,
			Address:        tcpip.LinkAddress(ifc.MAC),
			InterfaceIndex: ifc.Index,
			Bind:           true,
			QueueID:        0,
		})
		if err != nil {
			unix.Close(fd)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("gvisor xdp endpoint: %w", err)
	}
	if err := steer(u, ifc, fd, bpf.Owned{Addr: addr.Addr(), Flags: bpf.OwnAll | bpf.OwnNeigh}, 0); err != nil {
		return nil, err
	}
	ns := gstack.New(gstack.Options{
		NetworkProtocols:   []gstack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []gstack.TransportProtocolFactory{tcp.NewProtocol},
	})
	// RemoveNIC stops the endpoint's dispatch loop, which Wait waits for.
	u.add(func() { ns.Close(); ns.RemoveNIC(1); ns.Wait() })
	if terr := ns.CreateNIC(1, ep); terr != nil {
		return nil, errors.New(terr.String())
	}
	pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{
		Address: tcpip.AddrFrom4(addr.Addr().As4()), PrefixLen: vethtest.PrefixLen4}}
	if terr := ns.AddProtocolAddress(1, pa, gstack.AddressProperties{}); terr != nil {
		return nil, errors.New(terr.String())
	}
	ns.SetRouteTable([]tcpip.Route{{Destination: pa.AddressWithPrefix.Subnet(), NIC: 1}})
	ln, err := gonet.ListenTCP(ns, tcpip.FullAddress{NIC: 1, Addr: pa.AddressWithPrefix.Address, Port: addr.Port()}, ipv4.ProtocolNumber)
	if err != nil {
		return nil, err
	}
	u.add(func() { ln.Close() })
	dln, err := gonet.ListenTCP(ns, tcpip.FullAddress{NIC: 1, Addr: pa.AddressWithPrefix.Address, Port: addr.Port() + 1}, ipv4.ProtocolNumber)
	if err != nil {
		return nil, err
	}
	u.add(func() { dln.Close() })
	sln, err := gonet.ListenTCP(ns, tcpip.FullAddress{NIC: 1, Addr: pa.AddressWithPrefix.Address, Port: addr.Port() + 2}, ipv4.ProtocolNumber)
	if err != nil {
		return nil, err
	}
	u.add(func() { sln.Close() })
	go echo.ServeTCP(ln)
	go echo.ServeDiscard(dln)
	go echo.ServeSource(sln)
	// gVisor's endpoint never closes its socket or UMEM; the process
	// exits right after, which releases them.
	return u.run, nil
}

// whileBusy runs open until it succeeds, fails other than with EBUSY, or a
// second (xsk.DefaultBusyWait) has passed. The kernel frees the previous
// contender's queue asynchronously after its process exits; ustack's xsk
// waits for that itself, but gVisor's and asavie's sockets fail at once,
// and both format the errno with %v, so its text is all there is to test.
func whileBusy(open func() error) error {
	deadline := time.Now().Add(xsk.DefaultBusyWait)
	for {
		err := open()
		if err == nil || !strings.Contains(err.Error(), unix.EBUSY.Error()) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startFloor runs the raw AF_XDP floor, no TCP/IP stack at all: echo on
// port, sink on port+1, source on port+2 (reflector.Floor). With delay it
// answers that much after each batch arrives, standing in for a server's
// processing time.
func startFloor(iface string, port uint16, delay time.Duration, fresh bool) (func(), error) {
	f, stop, err := reflector.StartFloor(reflector.FloorConfig{Interface: iface, Addr: vethtest.UstackIPv4, Port: port, Delay: delay, Fresh: fresh})
	if err != nil {
		return nil, err
	}
	servedFloor = f
	return stop, nil
}

// startFloorAsavie runs the same reflector over github.com/asavie/xdp's
// socket instead of ustack's xsk, steered by the same program.
func startFloorAsavie(iface string, port uint16) (_ func(), err error) {
	ifc, err := xsk.LookupInterface(iface)
	if err != nil {
		return nil, err
	}
	u := &undoList{}
	defer func() {
		if err != nil {
			u.run()
		}
	}()
	var f *asavie.Floor
	if err := whileBusy(func() (err error) { f, err = asavie.Open(ifc.Index, 0); return err }); err != nil {
		return nil, err
	}
	u.add(func() { f.Close() })
	if err := steer(u, ifc, f.FD(), bpf.Owned{Addr: vethtest.UstackIPv4, Flags: bpf.OwnNeigh}, port); err != nil {
		return nil, err
	}
	f.MAC, f.IP, f.Spin = ifc.MAC, vethtest.UstackIPv4.As4(), true
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(stop, 24*time.Hour)
	}()
	u.add(func() { close(stop); <-done })
	return u.run, nil
}

// undoList runs cleanups in reverse order of registration.
type undoList struct{ fns []func() }

func (u *undoList) add(f func()) { u.fns = append(u.fns, f) }

func (u *undoList) run() {
	for i := len(u.fns) - 1; i >= 0; i-- {
		u.fns[i]()
	}
	u.fns = nil
}

// steer sets up ustack's steering program on ifc in native mode for one
// socket on queue 0, owning own and, if udpPort is not 0, that UDP port of
// its address; u undoes it.
func steer(u *undoList, ifc xsk.Interface, fd int, own bpf.Owned, udpPort uint16) error {
	s := bpf.Steering{Ifindex: ifc.Index, Mode: bpf.AttachNative, Sockets: []int{fd}, Owned: []bpf.Owned{own}}
	if udpPort != 0 {
		s.Ports = []bpf.OwnedPort{{Addr: own.Addr, Proto: bpf.UDP, Port: udpPort}}
	}
	prog, _, err := bpf.Setup(s)
	if err != nil {
		return fmt.Errorf("steer %s to the socket: %w", ifc.Name, err)
	}
	u.add(func() { prog.Close() })
	return nil
}

// serveQP serves perftest's queue-pair tests (the qp workload), one
// connection at a time, until ln is closed.
func serveQP(ln net.Listener) {
	l := qp.NewListener(ln)
	for {
		if _, err := perftest.Serve(context.Background(), l); errors.Is(err, net.ErrClosed) {
			return
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "bench serve: queue pair: %v\n", err)
		}
	}
}

// listenServers opens the TCP listeners of a contender's four servers, on
// addr's port and the three after it, or none.
func listenServers(listen func(network, address string) (net.Listener, error), addr netip.AddrPort) ([]net.Listener, error) {
	var lns []net.Listener
	for i := range uint16(4) {
		ln, err := listen("tcp", netip.AddrPortFrom(addr.Addr(), addr.Port()+i).String())
		if err != nil {
			closeAll(lns)
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}
