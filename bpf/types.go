package bpf

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotSupported is returned on systems without XDP (anything but Linux).
var ErrNotSupported = errors.New("XDP is only supported on Linux")

// ProgramName is the kernel name of the steering program; Attach uses it to
// recognise a stale copy left on an interface by a killed process.
const ProgramName = "ustack_xdp"

// MaxQueues is the number of XSKMAP slots: queues 0..MaxQueues-1 can have
// a socket, so it bounds stack.Config.Queues. TestMapSizesMatchGo checks
// xdp.c's MAX_QUEUES against it, and TestVethQueuesMatch vethtest's
// MaxQueues.
const MaxQueues = 64

// ErrForeignProgram is returned by Attach when the interface already runs
// an XDP program that is not ustack's.
var ErrForeignProgram = errors.New("interface already has a foreign XDP program")

// AttachMode selects how the program is attached to an interface.
type AttachMode int

const (
	// AttachAuto tries native (driver) mode and falls back to generic.
	AttachAuto AttachMode = iota
	// AttachNative requires native mode.
	AttachNative
	// AttachGeneric requires generic (SKB) mode.
	AttachGeneric
)

func (m AttachMode) String() string {
	switch m {
	case AttachAuto:
		return "auto"
	case AttachNative:
		return "native"
	case AttachGeneric:
		return "generic"
	}
	return fmt.Sprintf("AttachMode(%d)", int(m))
}

// Verdict is the program's return code for a frame.
type Verdict uint32

// Verdicts the program returns.
const (
	VerdictAborted  Verdict = iota // XDP_ABORTED
	VerdictDrop                    // XDP_DROP
	VerdictPass                    // XDP_PASS
	VerdictTX                      // XDP_TX
	VerdictRedirect                // XDP_REDIRECT
)

func (v Verdict) String() string {
	switch v {
	case VerdictAborted:
		return "aborted"
	case VerdictDrop:
		return "drop"
	case VerdictPass:
		return "pass"
	case VerdictTX:
		return "tx"
	case VerdictRedirect:
		return "redirect"
	}
	return fmt.Sprintf("Verdict(%d)", uint32(v))
}

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
	TxSynAck                    // a SYN answered in the program with a cookie (XDP_TX)
	numReasons
)

var reasonNames = [numReasons]string{
	"pass_not_ip", "pass_malformed", "pass_not_owned", "pass_no_socket",
	"redirect_addr", "redirect_port", "redirect_neigh", "redirect_icmp", "redirect_frag",
	"tx_synack",
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
	for r := RedirectAddr; r <= RedirectFrag; r++ {
		n += c[r]
	}
	return n - c[PassNoSocket]
}

// OwnFlags says which traffic to an owned address ustack takes. The values
// match the OWN_* flags in xdp.c.
type OwnFlags uint32

const (
	// OwnAll takes every IP packet to the address.
	OwnAll OwnFlags = 1 << iota
	// OwnNeigh takes ARP requests and replies whose target is the address,
	// NDP solicitations whose target it is, and NDP adverts sent to it.
	OwnNeigh
	// OwnICMP takes ICMP and ICMPv6 (other than NDP) to the address.
	OwnICMP
	// OwnFrags takes IP fragments to the address.
	OwnFrags
)

// OwnHost is what a stack that has an address to itself takes without
// a port registration: neighbour discovery, ICMP and fragments. TCP and UDP
// still go by owned_ports, so unregistered ports keep reaching the kernel.
const OwnHost = OwnNeigh | OwnICMP | OwnFrags

// Protocol is an IP protocol number owned_ports can hold.
type Protocol uint8

// Protocols owned_ports can hold.
const (
	TCP Protocol = 6
	UDP Protocol = 17
)

func (pr Protocol) String() string {
	switch pr {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	}
	return fmt.Sprintf("proto(%d)", uint8(pr))
}

// SynKeys are what the program needs to answer a SYN as a TCP's listener
// answers it with a SYN cookie (tcp.SynKeys, tcp.SynSecrets).
type SynKeys struct {
	Cookie   [2][16]byte
	TSOffset [16]byte
	// MonoBase is CLOCK_MONOTONIC at the zero of the TCP's monotonic
	// clock (cookie slots and timestamps count from it).
	MonoBase time.Duration
}

// SynAnswer is how the program answers SYNs to a listener: its
// SYN-ACK's MSS option, window, window scale (offered when the SYN
// asks), SACK-permitted (offered when the SYN asks), TTL and TOS, as
// netstack's AnswerSyn gives them; Until is the CLOCK_MONOTONIC time
// after which it leaves the SYNs to the socket again.
type SynAnswer struct {
	Until    time.Duration
	MSS      uint16
	Window   uint16
	WndScale int
	SACK     bool
	TTL, TOS uint8
}

// synSACK is SYN_SACK in xdp.c.
const synSACK = 1 << 0
