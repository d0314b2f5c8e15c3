package bpf

import "fmt"

// Reason is why the program gave a frame its verdict; the program keeps a
// per-CPU packet counter for each. The values match enum reason in xdp.c.
type Reason uint32

// Reasons, in counter-slot order.
const (
	PassNotIP     Reason = iota // neither IPv4, IPv6 nor ARP (VLAN-tagged included)
	PassMalformed               // truncated or invalid headers
	PassNotOwned                // well-formed, not ustack's
	PassNoSocket                // ustack's, but no AF_XDP socket on the queue
	RedirectAddr                // to an address owned with OwnAll
	RedirectPort                // to an owned (address, protocol, port)
	RedirectNeigh               // ARP/NDP for an owned address
	RedirectICMP                // ICMP to an owned address
	RedirectFrag                // IP fragment to an owned address
	numReasons
)

var reasonNames = [numReasons]string{
	"pass_not_ip", "pass_malformed", "pass_not_owned", "pass_no_socket",
	"redirect_addr", "redirect_port", "redirect_neigh", "redirect_icmp", "redirect_frag",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint32(r))
}

// Counters holds the program's packet counts per Reason, summed over CPUs.
// Redirect counts include frames that then fell back to pass for lack of a
// socket, which PassNoSocket counts as well.
type Counters [numReasons]uint64

// Redirected returns the frames classified as ustack's, minus those passed
// for lack of a socket.
func (c Counters) Redirected() uint64 {
	var n uint64
	for r := RedirectAddr; r < numReasons; r++ {
		n += c[r]
	}
	return n - c[PassNoSocket]
}

// Counters reads the per-CPU counters and sums them.
func (p *Program) Counters() (Counters, error) {
	var c Counters
	var perCPU []uint64
	for r := Reason(0); r < numReasons; r++ {
		if err := p.objs.Counters.Lookup(uint32(r), &perCPU); err != nil {
			return c, fmt.Errorf("read counter %v: %w", r, err)
		}
		for _, v := range perCPU {
			c[r] += v
		}
	}
	return c, nil
}
