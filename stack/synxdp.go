package stack

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
)

// SYNs answered in the steering program. When the worker answers a
// listener's IPv4 SYN with a cookie for want of room (half-open
// connections at the backlog, or the worker behind on its RX ring), or
// answers xdpSynRate cookie SYNs a second or more (SynCookiesAlways
// under a flood the worker keeps up with), it has the program answer
// that listener's next SYNs itself for xdpSynLease: the program computes the same cookie, options and
// timestamp as netstack's listener (the TCP's SipHash keys and clock,
// tcp.SynKeys) and sends the SYN-ACK back out of the interface
// (XDP_TX), in the receive path of whoever sent the SYN, as the kernel
// answers SYNs in softirq. The worker never sees those SYNs; the ACK
// that completes a handshake comes to it, and the listener validates its
// cookie as it validates its own. When the lease runs out the next SYN
// comes to the worker again, which renews the lease if the listener
// still answers with cookies.
//
// The program sends the SYN-ACK back to the MAC the SYN came from (the
// last hop), where the worker sends it through the route's next hop; it
// leaves to the worker SYNs over IPv6, with IP options, data, or a
// checksum it cannot verify (a local veth peer's partial checksum).

// xdpSynLease is how long the program answers a listener's SYNs after
// the worker last answered one with a cookie; the worker renews it when
// less than half is left.
const xdpSynLease = 200 * time.Millisecond

// xdpSynRate is the rate of cookie SYNs to a listener, counted over
// xdpSynWindow, at which the worker hands them to the program whether or
// not it falls behind: a worker answering them spends its CPU on a flood.
const (
	xdpSynRate   = 10000
	xdpSynWindow = 10 * time.Millisecond
)

// xdpLease is a listener's lease and cookie SYN count.
type xdpLease struct {
	until, window time.Duration // CLOCK_MONOTONIC: the lease's end, the count's window's start
	n             int           // cookie SYNs in the window
}

type xdpSyns struct {
	prog *bpf.Program

	mu     sync.Mutex
	leases map[netip.AddrPort]*xdpLease

	renewed, failed atomic.Uint64
}

// answerSynsInXDP gives prog the keys and clock of ns's TCP and has the
// worker hand cookie SYNs to it.
func (s *Stack) answerSynsInXDP(prog *bpf.Program) error {
	d := s.ep.Demux()
	if d == nil {
		return nil
	}
	k, err := tcp.SynSecrets(s.ns)
	if err != nil {
		return err
	}
	// CLOCK_MONOTONIC at the zero of netstack's monotonic clock: Go's
	// monotonic time is CLOCK_MONOTONIC, read twice here a few
	// nanoseconds apart.
	base := bpf.Monotonic() - time.Duration(s.ns.Clock().NowMonotonic().Sub(tcpip.MonotonicTime{}))
	if err := prog.SetSynKeys(bpf.SynKeys{Cookie: k.Cookie, TSOffset: k.TSOffset, MonoBase: base}); err != nil {
		return fmt.Errorf("answer SYNs in the steering program: %w", err)
	}
	x := &xdpSyns{prog: prog, leases: map[netip.AddrPort]*xdpLease{}}
	s.xdpSyn = x
	d.SetCookieSynHook(x.cookieSyn)
	return nil
}

// cookieSyn (link.Demux's cookie SYN hook) renews the listener's lease.
func (x *xdpSyns) cookieSyn(id gstack.TransportEndpointID, a tcp.SynAck) {
	now := bpf.Monotonic()
	ap := netip.AddrPortFrom(netip.AddrFrom4(id.LocalAddress.As4()), id.LocalPort)
	x.mu.Lock()
	l := x.leases[ap]
	if l == nil {
		l = &xdpLease{}
		x.leases[ap] = l
	}
	if now-l.window > xdpSynWindow {
		l.window, l.n = now, 0
	}
	l.n++
	rate := l.n >= xdpSynRate*int(xdpSynWindow)/int(time.Second)
	if (!a.Flood && !rate) || l.until-now > xdpSynLease/2 {
		x.mu.Unlock()
		return
	}
	l.until = now + xdpSynLease
	x.mu.Unlock()
	err := x.prog.AnswerSyns(ap.Addr(), ap.Port(), bpf.SynAnswer{
		Until: now + xdpSynLease, MSS: a.MSS, Window: a.Window, WndScale: a.WndScale, SACK: a.SACK, TTL: a.TTL, TOS: a.TOS,
	})
	if err != nil {
		x.failed.Add(1)
		return
	}
	x.renewed.Add(1)
}
