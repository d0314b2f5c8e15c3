package stack

import (
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// PollPolicy is how a queue's worker waits for packets.
type PollPolicy int

const (
	// Adaptive busy-polls the RX ring while traffic flows and for
	// SpinBudget after the last packet, then blocks in poll(2). The
	// default: low latency under load, no CPU burned when idle.
	Adaptive PollPolicy = iota
	// Spin busy-polls the RX ring always: the lowest latency, one core
	// per queue at 100%.
	Spin
	// Blocking waits in poll(2) whenever the RX ring is empty: the least
	// CPU, tens of microseconds of wakeup latency per packet in a VM.
	Blocking
)

func (p PollPolicy) String() string {
	switch p {
	case Adaptive:
		return "adaptive"
	case Spin:
		return "spin"
	case Blocking:
		return "blocking"
	}
	return fmt.Sprintf("PollPolicy(%d)", int(p))
}

// ParsePollPolicy parses "spin", "adaptive" or "blocking".
func ParsePollPolicy(s string) (PollPolicy, error) {
	for _, p := range []PollPolicy{Adaptive, Spin, Blocking} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: poll policy %q (want spin, adaptive or blocking)", ErrConfig, s)
}

// CongestionControl names a TCP congestion control algorithm
// (Config.CongestionControl).
type CongestionControl string

// The congestion control algorithms. On a LAN whose round trip is tens of
// microseconds they differ most through random loss; docs/reliability.md
// ("Loss recovery") compares them with the kernel's TCP there.
const (
	// CongestionBBR is BBR version 1 as Linux's tcp_bbr.c has it,
	// setting the window only, since netstack has no pacer: through
	// random loss it keeps the window its bandwidth and delay model
	// gives. The default.
	CongestionBBR CongestionControl = "bbr"
	// CongestionReno halves the window at every loss and grows it back
	// one segment per round trip, so on a LAN random loss holds it near
	// ten segments.
	CongestionReno CongestionControl = "reno"
	// CongestionCubic is netstack's CUBIC, which grows the window by
	// elapsed time over a smoothed RTT floored at 1 ms, so on a LAN it
	// stays at a few segments after a loss.
	CongestionCubic CongestionControl = "cubic"
)

var congestionControls = []CongestionControl{CongestionBBR, CongestionReno, CongestionCubic}

// ParseCongestionControl parses "bbr", "reno" or "cubic".
func ParseCongestionControl(s string) (CongestionControl, error) {
	c := CongestionControl(s)
	if err := c.validate(); err != nil {
		return "", err
	}
	return c, nil
}

func (c CongestionControl) validate() error {
	for _, v := range congestionControls {
		if c == v {
			return nil
		}
	}
	return fmt.Errorf("%w: congestion control %q (want bbr, reno or cubic)", ErrConfig, string(c))
}

// SynCookieMode says when a listener answers a SYN with a SYN cookie
// (Config.SynCookies).
type SynCookieMode string

// The SYN cookie modes.
const (
	// SynCookiesAuto answers with a cookie once 4,095 half-open
	// connections are pending on the listener, as Linux's
	// tcp_syncookies=1 does. The default.
	SynCookiesAuto SynCookieMode = "auto"
	// SynCookiesAlways answers every SYN with a cookie, as Linux's
	// tcp_syncookies=2 does, so that no SYN allocates anything until the
	// ACK that completes the handshake.
	SynCookiesAlways SynCookieMode = "always"
)

// ParseSynCookieMode parses "auto" or "always".
func ParseSynCookieMode(s string) (SynCookieMode, error) {
	m := SynCookieMode(s)
	if err := m.validate(); err != nil {
		return "", err
	}
	return m, nil
}

func (m SynCookieMode) validate() error {
	if m != SynCookiesAuto && m != SynCookiesAlways {
		return fmt.Errorf("%w: syn cookies %q (want auto or always)", ErrConfig, string(m))
	}
	return nil
}

// XDPSynMode says whether the steering program answers a flooded
// listener's SYNs itself (Config.XDPSyn).
type XDPSynMode string

// The modes of the steering program's SYN answers.
const (
	// XDPSynAuto is XDPSynOn except on a veth interface, where it is
	// XDPSynOff: veth delivers the program's answers (XDP_TX) to the
	// peer end only if that end runs an XDP program of its own, and
	// drops them otherwise, so a client there would wait for its SYN's
	// retransmission. The default.
	XDPSynAuto XDPSynMode = "auto"
	// XDPSynOn: once the worker answers a listener's IPv4 SYN with a SYN
	// cookie (a flood, a burst it falls behind on, or SynCookiesAlways),
	// the steering program answers that listener's SYNs itself for a
	// while, with the same cookie (Stats.Syn.InXDP), out of the
	// interface they came in on: in the receive path of whoever sends
	// them, as the kernel answers SYNs in softirq, not on the worker's
	// CPU. It leaves to the worker SYNs over IPv6, with IP options or
	// data, and any whose checksum it cannot verify (a local veth
	// peer's partial checksum). On veth, only for a peer end that runs
	// XDP.
	XDPSynOn XDPSynMode = "on"
	// XDPSynOff leaves every SYN to the worker.
	XDPSynOff XDPSynMode = "off"
)

// ParseXDPSynMode parses "auto", "on" or "off".
func ParseXDPSynMode(s string) (XDPSynMode, error) {
	m := XDPSynMode(s)
	if err := m.validate(); err != nil {
		return "", err
	}
	return m, nil
}

// answers reports whether the mode has the steering program answer SYNs
// on an interface of the given link kind ("veth", ...).
func (m XDPSynMode) answers(kind string) bool {
	return m == XDPSynOn || m == XDPSynAuto && kind != "veth"
}

func (m XDPSynMode) validate() error {
	if m != XDPSynAuto && m != XDPSynOn && m != XDPSynOff {
		return fmt.Errorf("%w: xdp syn %q (want auto, on or off)", ErrConfig, string(m))
	}
	return nil
}

// Config configures a Stack. The zero value of every field but Addrs
// (and Interface, for New) selects its default.
type Config struct {
	// Interface is the name of the interface to attach to, in the calling
	// thread's network namespace. Its MAC address and MTU are used.
	Interface string
	// Addrs are the addresses ustack owns, with their on-link prefix
	// (for example 198.18.0.10/24 and 2001:2::10/64). At least one. They
	// must not be the kernel's own addresses on the interface.
	Addrs []netip.Prefix
	// Gateway4 and Gateway6 are optional default routers. A SYN from a
	// peer off Addrs' prefixes is answered on the worker through its
	// family's router, at the MAC netstack's neighbour cache holds for
	// it (Stats.Syn.MissRoute and MissUnresolved count those
	// left to netstack for want of one).
	Gateway4, Gateway6 netip.Addr

	// Queues is how many interface queues to serve, each with an AF_XDP
	// socket and a worker (default 1; at most the interface's RX queues).
	Queues int
	// Pin locks worker i to CPU i mod NumCPU.
	Pin bool
	// Poll is the workers' polling policy (default Adaptive).
	Poll PollPolicy
	// SpinBudget is how long an Adaptive worker keeps busy-polling after
	// the last packet before it blocks (default 200µs).
	SpinBudget time.Duration

	// UMEMSize is the packet memory each queue maps and registers with
	// the kernel, which pins all of it (charged to RLIMIT_MEMLOCK) and
	// keeps it resident: RingSize frames of it for transmitting, the
	// rest for receiving (default DefaultUMEMSize, 16 MiB: at MTU 1500,
	// 1024 frames of 2 KiB to transmit and 7,168 to receive). It is
	// rounded down to a whole number of frames; Stack.UMEMSize reports
	// it. A burst of connections is absorbed by the worker's speed, not
	// by frames held: once half of the receive frames wait on the RX
	// ring, the worker answers every SYN to a listener itself with a SYN
	// cookie (Stats.Syn.OnWorkerPressure), as under SynCookiesAlways.
	// A burst of thousands of connections at once can still overflow
	// the fill ring with the handshakes' last ACKs, which their senders
	// then retransmit; set 64 MiB where such bursts are expected
	// (docs/known-issues.md).
	UMEMSize int
	// RingSize is the size of the TX and completion rings, and the
	// number of frames set aside for transmitting (default 1024).
	RingSize uint32
	// RxRingSize is the size of the RX and fill rings (default: the
	// power of two that holds every receive frame UMEMSize leaves). Set
	// without UMEMSize, it is also the number of receive frames, and
	// UMEMSize is (RxRingSize + RingSize) × FrameSize.
	RxRingSize uint32
	// FrameSize is the UMEM frame size, 2048 or 4096 (default: 2048 when
	// an MTU-sized frame fits one, with the kernel's 256 bytes of
	// headroom, that is an MTU up to 1778; 4096 above). A frame larger
	// than a UMEM frame comes and goes as a chain of frames.
	FrameSize uint32

	// TCPSendBuffer and TCPReceiveBuffer are the default TCP buffer sizes
	// in bytes (default 1 MiB each; netstack autotunes the receive side
	// up to 4 MiB).
	TCPSendBuffer, TCPReceiveBuffer int
	// DelayedAck is the longest TCP holds the ACK it owes for received
	// data, waiting for a segment of the application's (typically its
	// reply) to carry it (default 500µs; negative: acknowledge every
	// received batch at once). An ACK still goes at once for every second
	// full-sized segment, for out-of-order data and for a FIN.
	DelayedAck time.Duration
	// MaxTimeWait is how many closed TCP connections may wait in
	// TIME-WAIT (5 s) at once (default 1024; negative: no limit). A
	// connection closing beyond it skips TIME-WAIT, as Linux's do when
	// its tcp_max_tw_buckets overflows; Stats.TCP.TimeWaitOverflows counts
	// them. Each TIME-WAIT connection keeps its whole netstack endpoint
	// (several KiB, against the kernel's few hundred bytes), so without a
	// bound a server closing 10,000 connections a second holds 50,000.
	MaxTimeWait int
	// CongestionControl is TCP's congestion control algorithm (default
	// CongestionBBR). Keep BBR on paths with random loss.
	CongestionControl CongestionControl
	// SynCookies says when a listener answers a SYN with a SYN cookie
	// (RFC 4987) instead of a half-open connection (default
	// SynCookiesAuto). A cookie carries the MSS (one of 536, 1300, 1440,
	// 1460); when the SYN has timestamps, its window scale and
	// SACK-permitted ride in the SYN-ACK's timestamp and are kept, as
	// Linux's cookie_init_timestamp keeps them; without, the connection
	// has neither, as with Linux. A server that speaks first can lose its
	// connection with the handshake's last ACK: no SYN-ACK is resent for
	// a cookie. Hence SynCookiesAuto by default, though SynCookiesAlways
	// costs a connection's setup about the same time and a few more
	// allocations (BenchmarkMemConnectSynCookies compares them).
	// Stats.Syn.CookiesSent and the two after it count what they do. A
	// SYN answered with a cookie is answered by the worker itself, from
	// its frame (Stats.Syn.OnWorker): under a flood SynCookiesAlways
	// keeps the fill ring from overflowing where SynCookiesAuto first
	// makes 4,095 half-open connections (docs/known-issues.md).
	SynCookies SynCookieMode
	// XDPSyn says whether the steering program answers a flooded
	// listener's SYNs itself (default XDPSynAuto: yes, but on veth).
	// Debug.NoFastPath turns it off whatever it says.
	XDPSyn XDPSynMode

	// ForceGenericXDP attaches the steering program in generic mode
	// instead of trying native mode first.
	ForceGenericXDP bool
	// TrustRxChecksum skips software verification of received TCP/UDP
	// checksums. Only safe when the peer computes full checksums and the
	// link cannot corrupt frames.
	TrustRxChecksum bool

	// Trace records a latency breakdown of request/response traffic: the
	// time from a request's frame leaving the RX ring to netstack being
	// done with it, the application reading it and writing its reply, the
	// reply's frame reaching the TX ring, and the kick. Read it from
	// Stats().Trace. It samples one RX batch in 8, so that its clock
	// reads burden one request in 8. Off, it costs a nil check per stage.
	Trace bool
	// Faults, when set, injects seeded faults (drop, corruption,
	// duplication, reordering, delay) into every queue's frames, per
	// direction: for testing applications against a bad network. Counted
	// in Stats().Queues[i].FaultsRX and FaultsTX.
	Faults *Faults
	// Capture, when set, records every frame sent and received in pcap
	// format (see Capture). Counted in Stats().Capture.
	Capture *Capture
	// Logf receives notices such as a fallback to generic XDP (default
	// log.Printf). It must be safe for concurrent use.
	Logf func(format string, args ...any)

	// Debug turns parts of ustack's data path off, for comparisons and
	// diagnosis. Its zero value, everything on, is what applications
	// want.
	Debug Debug

	// clock, when set, is netstack's clock instead of the system's (tests).
	clock tcpip.Clock
}

// Debug holds switches that each turn a part of ustack's data path off,
// leaving its work to netstack's own path or to a slower one: to measure
// what the part is worth, or to rule it out when diagnosing. None of
// them makes the stack faster.
type Debug struct {
	// HandOffTCP hands received TCP segments to netstack's processor
	// goroutines, as upstream netstack does, instead of processing them
	// on the worker after each RX batch (run to completion, the default).
	HandOffTCP bool
	// NoEarlyDemux sends every received segment through netstack's NIC,
	// IP and demuxer layers; by default a verified segment of a plain
	// IPv4 or IPv6 connection goes straight to it. It turns the fast
	// path's receive off too, which sits in early demux.
	NoEarlyDemux bool
	// NoFastPath turns ustack's TCP fast path off. Receiving, an
	// in-order data segment of a quiet established connection that
	// passes header prediction (as Linux's tcp_rcv_established predicts)
	// is processed where early demux finds its connection, without
	// netstack's segment queue and generic checks (Stats.FastPath.Received
	// and TCPFastMiss*). Sending, a segment of a plain IPv4 or IPv6
	// connection goes from TCP to the link endpoint with its IP header
	// written in one step, and a data segment's frame is written by the
	// link from the connection's header template and the segment's
	// bytes, copied once, not through netstack's IP and NIC layers;
	// Stats.FastPath.Sent counts them. A listener's SYN that it
	// answers with a SYN cookie is answered by the worker from the frame
	// (Stats.Syn.OnWorker).
	NoFastPath bool
	// NetstackFastPath leaves handlers' established connections, and
	// those read on the worker (PollOnWorker: queue pairs'), to
	// netstack and its fast path above. By default ustack owns them
	// while they are in the common case (in order, loss-free, not
	// limited by the window, IPv4): the worker receives their segments
	// with header prediction, gives the payload to the handler from the
	// frame, and cuts the replies from a per-connection send ring into
	// TX frames behind a header template; netstack takes a connection
	// back at the first thing that path does not do
	// (Stats.FastPath.Owned). NoFastPath turns it off too.
	NetstackFastPath bool
	// NoTxChecksum makes netstack compute TCP and UDP checksums in a pass
	// of its own before the copy into the UMEM frame. By default the link
	// endpoint tells netstack it offloads them and computes each one
	// while copying the packet into its frame (package offload): one pass
	// over the bytes instead of two. GSO needs it (no GSO then).
	NoTxChecksum bool
	// NoGSO turns segmentation offload off. By default the link
	// endpoint advertises it (as a NIC's TSO): netstack sends TCP packets
	// of up to 64 KiB and package offload cuts them into MSS-sized frames
	// while copying them into UMEM, checksums included, so netstack's
	// per-packet work is done once per 64 KiB instead of once per
	// 1.4 KiB (docs/offload.md). Loss inside such a packet is found and
	// repaired per frame, as Linux splits a sent skb where a SACK block
	// ends (tcp_sacktag_walk), so random loss costs no more time than
	// without GSO. NoTxChecksum turns it off too.
	NoGSO bool
	// NoGRO turns receive coalescing off. By default, within each
	// received batch, consecutive in-order TCP segments of one flow with
	// matching headers are merged into one packet before netstack sees it
	// (package offload, on Linux's GRO rules: anything unusual passes as
	// is), so netstack's per-packet work is done once per run.
	NoGRO bool
}

func (c *Config) setDefaults() {
	if c.Queues == 0 {
		c.Queues = 1
	}
	if c.SpinBudget == 0 {
		c.SpinBudget = 200 * time.Microsecond
	}
	if c.RingSize == 0 {
		c.RingSize = 1024
	}
	if c.TCPSendBuffer == 0 {
		c.TCPSendBuffer = 1 << 20
	}
	if c.TCPReceiveBuffer == 0 {
		c.TCPReceiveBuffer = 1 << 20
	}
	if c.CongestionControl == "" {
		c.CongestionControl = CongestionBBR
	}
	if c.MaxTimeWait == 0 {
		c.MaxTimeWait = 1024
	}
	if c.SynCookies == "" {
		c.SynCookies = SynCookiesAuto
	}
	if c.XDPSyn == "" {
		c.XDPSyn = XDPSynAuto
	}
	if c.DelayedAck == 0 {
		c.DelayedAck = 500 * time.Microsecond
	}
	if c.Logf == nil {
		c.Logf = log.Printf
	}
}

func (c *Config) validate() error {
	if len(c.Addrs) == 0 {
		return fmt.Errorf("%w: no addresses", ErrConfig)
	}
	var v4, v6 int
	for _, p := range c.Addrs {
		if !p.IsValid() || p.Addr().Is4In6() || p.Addr().IsUnspecified() || p.Addr().IsMulticast() {
			return fmt.Errorf("%w: address %v is not a usable unicast prefix", ErrConfig, p)
		}
		if p.Addr().Is4() {
			v4++
		} else {
			v6++
		}
	}
	if v4 > 1 || v6 > 1 {
		return fmt.Errorf("%w: at most one IPv4 and one IPv6 address", ErrConfig)
	}
	if c.Gateway4.IsValid() && !c.Gateway4.Is4() || c.Gateway6.IsValid() && !c.Gateway6.Is6() {
		return fmt.Errorf("%w: gateway family mismatch", ErrConfig)
	}
	if c.Queues < 1 || c.Queues > bpf.MaxQueues {
		return fmt.Errorf("%w: queues %d outside [1, %d]", ErrConfig, c.Queues, bpf.MaxQueues)
	}
	if c.Poll < Adaptive || c.Poll > Blocking {
		return fmt.Errorf("%w: unknown poll policy %v", ErrConfig, c.Poll)
	}
	if c.SpinBudget < 0 {
		return fmt.Errorf("%w: negative spin budget", ErrConfig)
	}
	if c.RingSize < 64 || c.RingSize&(c.RingSize-1) != 0 || c.RingSize > 16384 {
		return fmt.Errorf("%w: ring size %d is not a power of two in [64, 16384]", ErrConfig, c.RingSize)
	}
	if c.RxRingSize != 0 && (c.RxRingSize < 64 || c.RxRingSize&(c.RxRingSize-1) != 0 || c.RxRingSize > 65536) {
		return fmt.Errorf("%w: rx ring size %d is not a power of two in [64, 65536]", ErrConfig, c.RxRingSize)
	}
	if c.FrameSize != 0 && c.FrameSize != 2048 && c.FrameSize != 4096 {
		return fmt.Errorf("%w: frame size %d is not 2048 or 4096", ErrConfig, c.FrameSize)
	}
	if c.UMEMSize < 0 || c.UMEMSize > maxUMEMSize {
		return fmt.Errorf("%w: umem size %d outside [0, %d]", ErrConfig, c.UMEMSize, maxUMEMSize)
	}
	if c.TCPSendBuffer < 4096 || c.TCPReceiveBuffer < 4096 {
		return fmt.Errorf("%w: tcp buffers under 4096 bytes", ErrConfig)
	}
	if c.DelayedAck > 500*time.Millisecond {
		return fmt.Errorf("%w: delayed ACK %v over 500ms (RFC 1122 §4.2.3.2)", ErrConfig, c.DelayedAck)
	}
	if err := c.CongestionControl.validate(); err != nil {
		return err
	}
	if err := c.XDPSyn.validate(); err != nil {
		return err
	}
	if err := c.SynCookies.validate(); err != nil {
		return err
	}
	if c.Capture != nil {
		if err := c.Capture.validate(); err != nil {
			return err
		}
	}
	if f := c.Faults; f != nil {
		if err := f.RX.validate("RX"); err != nil {
			return err
		}
		if err := f.TX.validate("TX"); err != nil {
			return err
		}
	}
	return nil
}

// DefaultUMEMSize is the default Config.UMEMSize: the packet memory one
// queue pins.
const DefaultUMEMSize = 16 << 20

// maxUMEMSize bounds Config.UMEMSize: 65,536 receive frames and 16,384
// transmit frames of 4 KiB, the largest rings Config takes.
const maxUMEMSize = (65536 + 16384) * 4096

// xdpPacketHeadroom is the headroom the kernel leaves in front of a
// packet in each UMEM frame (XDP_PACKET_HEADROOM).
const xdpPacketHeadroom = 256

// umemLayout is how one queue's UMEM is cut into frames.
type umemLayout struct {
	frameSize          uint32
	rxFrames, txFrames uint32
}

// size is the UMEM bytes per queue.
func (l umemLayout) size() int { return int(l.rxFrames+l.txFrames) * int(l.frameSize) }

// layout fills in FrameSize, RxRingSize and UMEMSize for a link of the
// given MTU (setDefaults and validate done) and returns the receive and
// transmit frames per queue.
func (c *Config) layout(mtu uint32) (umemLayout, error) {
	if c.FrameSize == 0 {
		c.FrameSize = 4096
		if mtu+ethHeaderLen <= 2048-xdpPacketHeadroom {
			c.FrameSize = 2048
		}
	}
	if c.UMEMSize == 0 {
		c.UMEMSize = DefaultUMEMSize
		if c.RxRingSize != 0 {
			c.UMEMSize = int(c.RxRingSize+c.RingSize) * int(c.FrameSize)
		}
	}
	frames := c.UMEMSize / int(c.FrameSize)
	if frames < int(c.RingSize)+64 {
		return umemLayout{}, fmt.Errorf("%w: umem size %d holds %d frames of %d bytes, not the %d transmit frames and 64 to receive", ErrConfig, c.UMEMSize, frames, c.FrameSize, c.RingSize)
	}
	l := umemLayout{frameSize: c.FrameSize, txFrames: c.RingSize, rxFrames: uint32(frames) - c.RingSize}
	if c.RxRingSize == 0 {
		c.RxRingSize = 64
		for c.RxRingSize < l.rxFrames && c.RxRingSize < 65536 {
			c.RxRingSize <<= 1
		}
	}
	// The fill ring must hold every receive frame, and half of it at least
	// must be filled (xsk.Open).
	l.rxFrames = min(l.rxFrames, c.RxRingSize)
	if l.rxFrames < c.RxRingSize/2 {
		return umemLayout{}, fmt.Errorf("%w: umem size %d leaves %d receive frames, under half of the %d-entry fill ring", ErrConfig, c.UMEMSize, l.rxFrames, c.RxRingSize)
	}
	c.UMEMSize = l.size()
	return l, nil
}
