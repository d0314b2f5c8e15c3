package link

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header/parse"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
)

// SegmentQueuer is netstack's TCP protocol as the transport demuxer sees
// it: it queues a segment to a connection.
type SegmentQueuer interface {
	QueuePacket(ep gstack.TransportEndpoint, id gstack.TransportEndpointID, pkt *gstack.PacketBuffer)
}

// Demux is early demux, as Linux's tcp_v4_early_demux and
// tcp_v6_early_demux: a verified TCP segment over plain IPv4 (no options,
// not a fragment) or IPv6 (no extension headers) for a connection goes
// straight to it, skipping netstack's NIC, IP and demuxer layers, which
// for such a segment only find the same connection again: first to the
// fast path's receive (header prediction, tcp.Endpoint.ReceiveFast), then to
// the connection's queue. Everything else (ICMP, IP options, extension
// headers, fragments, multicast) takes netstack's path. The IP layer's
// counters are kept.
type Demux struct {
	ns  Netstack
	nic tcpip.NICID // the endpoint's
	tcp SegmentQueuer
	// netstack's IP counters the skipped layers would have counted.
	received, valid, delivered *tcpip.StatCounter
	// sent is netstack's IP counter of packets sent, which the SYN-ACKs
	// the worker writes count in.
	sent *tcpip.StatCounter
	// fast offers each segment to the TCP fast path's receive first
	// (tcp.Endpoint.ReceiveFast), and a listener's SYNs to answerSyn
	// (tcp.Endpoint.AnswerSyn); off with stack.Config.NoFastPath.
	fast bool
	// mac and prefixes are ustack's MAC and on-link prefixes, and gw4
	// and gw6 its default routers (zero: none), for the SYN-ACKs the
	// worker writes: to an on-link peer straight back, to an off-link
	// one through its family's router, the route's next hop.
	mac      tcpip.LinkAddress
	prefixes []netip.Prefix
	gw4, gw6 tcpip.Address
	// noSyn leaves every SYN to netstack's listener (tests that compare
	// the two answers: LeaveSyns).
	noSyn atomic.Bool
	// ep is the link endpoint the demux is set on (SetDemux), whose
	// owners the owned fast path carries if ownOn.
	ep    *Endpoint
	ownOn bool
	// cookieSyn, if set, is told of every IPv4 SYN the worker answered
	// with a cookie (SetCookieSynHook).
	cookieSyn func(id gstack.TransportEndpointID, s tcp.SynAck)
}

// Netstack is what early demux asks of netstack's stack
// (*stack.Stack): the connection a segment is for, and the counters of
// the layers it skips.
type Netstack interface {
	FindTransportEndpoint(netProto tcpip.NetworkProtocolNumber, transProto tcpip.TransportProtocolNumber, id gstack.TransportEndpointID, nicID tcpip.NICID) gstack.TransportEndpoint
	Stats() *tcpip.Stats
	// GetLinkAddress calls onResolve at once with addr's link address
	// if its neighbour entry has one, else starts resolving it (the
	// call then reports tcpip.ErrWouldBlock and onResolve runs later,
	// on another goroutine).
	GetLinkAddress(nicID tcpip.NICID, addr, localAddr tcpip.Address, protocol tcpip.NetworkProtocolNumber, onResolve func(gstack.LinkResolutionResult)) tcpip.Error
}

// NewDemux returns early demux for netstack ns, whose NIC nic is the
// endpoint's: segments go to tcp, first to the fast path if fast; mac,
// prefixes and gateways (the default routers, if any) are the link's,
// for the SYN-ACKs the worker writes.
func NewDemux(ns Netstack, nic tcpip.NICID, tcp SegmentQueuer, fast bool, mac tcpip.LinkAddress, prefixes []netip.Prefix, gateways ...netip.Addr) *Demux {
	ip := ns.Stats().IP
	f := &Demux{ns: ns, nic: nic, tcp: tcp, received: ip.PacketsReceived, valid: ip.ValidPacketsReceived, delivered: ip.PacketsDelivered,
		sent: ip.PacketsSent, fast: fast, mac: mac, prefixes: prefixes}
	for _, gw := range gateways {
		switch {
		case gw.Is4():
			f.gw4 = tcpip.AddrFromSlice(gw.AsSlice())
		case gw.Is6():
			f.gw6 = tcpip.AddrFromSlice(gw.AsSlice())
		}
	}
	return f
}

// LeaveSyns leaves every SYN to netstack's listener while on (tests that
// compare the worker's answer with the listener's).
func (f *Demux) LeaveSyns(on bool) { f.noSyn.Store(on) }

// SetCookieSynHook has hook told, on the worker, of each IPv4 SYN a
// listener answered there with a cookie (tcp.SynAck's Flood says
// whether for want of room): the SYNs of a flood, or of a burst the
// worker is falling behind on, whose next ones the steering program can
// answer itself. hook must not block. Set it before traffic
// starts.
func (f *Demux) SetCookieSynHook(hook func(id gstack.TransportEndpointID, s tcp.SynAck)) {
	f.cookieSyn = hook
}

// deliver queues frame to its connection and reports whether it did; the
// caller delivers it the ordinary way if not. frame's checksums have been
// verified. If v is not nil, frame is v's bytes and deliver takes
// ownership of v when it returns true (the frame is then not copied);
// otherwise it copies frame.
//
// The steps: parse the headers; a connection the owned fast path carries
// takes the segment there (ownedReceive); otherwise find the connection
// (lookup), answer a listener's SYN on the worker (offerSyn), offer the
// segment to netstack's fast path (ReceiveFast), and queue it to the
// connection (queue).
func (f *Demux) deliver(q *queue, frame []byte, v *buffer.View) bool {
	var sg segment
	if !sg.parse(frame) {
		return false
	}
	if sg.v4 && q.own.n.Load() > 0 {
		if e := q.ownedLookup(&sg.key); e != nil && q.ownedReceive(e, frame) {
			if v != nil {
				v.Release()
			}
			f.count()
			if q.deferred.solo {
				// A request alone in its batch: its reply leaves now,
				// not after the rest of the worker's turn (as
				// Stream.runDirect's FlushIfSolo).
				q.flushTx()
			}
			return true
		}
	}
	ep, tep, slot, listening := f.lookup(q, &sg)
	if ep == nil {
		return false
	}
	if f.fast && listening && !f.noSyn.Load() && f.offerSyn(q, frame, &sg, tep) {
		if v != nil {
			v.Release()
		}
		f.count()
		return true
	}
	if f.fast && tep != nil {
		if f.ownOn && sg.v4 && !listening {
			f.noteCandidate(q, tep, slot, &sg.key, frame)
		}
		miss := tep.ReceiveFast(sg.th, sg.ipLen, v, ethHeaderLen+sg.ipLen+int(sg.th.DataOffset()), &q.deferred)
		q.rxFast[miss].Add(1)
		if miss == tcp.FastHit {
			f.count()
			return true
		}
	}
	return f.queue(q, frame, v, ep, &sg)
}

// segment is a TCP segment's headers as deliver parsed them.
type segment struct {
	proto tcpip.NetworkProtocolNumber
	ipLen int // the IP header's
	total int // the IP packet's
	id    gstack.TransportEndpointID
	th    header.TCP
	v4    bool
	key   ownKey // the four-tuple, for IPv4
}

// parse reads frame's headers: a TCP segment over plain IPv4 (no
// options, not a fragment) or IPv6 (no extension headers, not multicast)
// whose lengths agree, or false.
func (sg *segment) parse(frame []byte) bool {
	if len(frame) < ethHeaderLen+header.IPv4MinimumSize+header.TCPMinimumSize {
		return false
	}
	var src, dst tcpip.Address
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case uint16(header.IPv4ProtocolNumber):
		ip := header.IPv4(frame[ethHeaderLen:])
		if ip[0] != 0x45 || ip.Protocol() != uint8(header.TCPProtocolNumber) || ip.More() || ip.FragmentOffset() != 0 {
			return false
		}
		sg.proto, sg.ipLen, sg.total = header.IPv4ProtocolNumber, header.IPv4MinimumSize, int(ip.TotalLength())
		src, dst = ip.SourceAddress(), ip.DestinationAddress()
		sg.v4 = true
	case uint16(header.IPv6ProtocolNumber):
		// No extension headers: TCP right after the fixed header.
		if len(frame) < ethHeaderLen+header.IPv6MinimumSize+header.TCPMinimumSize {
			return false
		}
		ip := header.IPv6(frame[ethHeaderLen:])
		if ip[0]>>4 != 6 || ip.NextHeader() != uint8(header.TCPProtocolNumber) {
			return false
		}
		sg.proto, sg.ipLen, sg.total = header.IPv6ProtocolNumber, header.IPv6MinimumSize, header.IPv6MinimumSize+int(ip.PayloadLength())
		src, dst = ip.SourceAddress(), ip.DestinationAddress()
		if header.IsV6MulticastAddress(dst) {
			return false
		}
	default:
		return false
	}
	ip := frame[ethHeaderLen:]
	if sg.total < sg.ipLen+header.TCPMinimumSize || sg.total > len(ip) {
		return false
	}
	sg.th = header.TCP(ip[sg.ipLen:sg.total])
	if off := int(sg.th.DataOffset()); off < header.TCPMinimumSize || off > len(sg.th) {
		// Checked here, before v is taken: parse.TCP in queue then
		// cannot fail after the caller's view has become the packet's.
		return false
	}
	sg.id = gstack.TransportEndpointID{
		LocalPort:     sg.th.DestinationPort(),
		LocalAddress:  dst,
		RemotePort:    sg.th.SourcePort(),
		RemoteAddress: src,
	}
	if sg.v4 {
		sg.key = ownKey{la: dst.As4(), ra: src.As4(), lp: sg.id.LocalPort, rp: sg.id.RemotePort}
	}
	return true
}

// lookup finds the endpoint sg is for, through the flow cache for an
// established connection; tep is it as a TCP endpoint, slot its place in
// the cache (nil if none), and listening says whether it is a
// listener's.
func (f *Demux) lookup(q *queue, sg *segment) (ep gstack.TransportEndpoint, tep *tcp.Endpoint, slot *flowSlotEntry, listening bool) {
	slot = &q.flows[flowSlot(&sg.id)]
	if tep = slot.ep; tep != nil && slot.id == sg.id && tep.EndpointState() == tcp.StateEstablished {
		return tep, tep, slot, false
	}
	ep = f.ns.FindTransportEndpoint(sg.proto, header.TCPProtocolNumber, sg.id, f.nic)
	if ep == nil {
		return nil, nil, nil, false
	}
	tep, _ = ep.(*tcp.Endpoint)
	if tep != nil {
		switch tep.EndpointState() {
		case tcp.StateEstablished:
			*slot = flowSlotEntry{id: sg.id, ep: tep}
			return ep, tep, slot, false
		case tcp.StateListen:
			listening = true
		}
	}
	return ep, tep, nil, listening
}

// offerSyn offers listener tep a segment for it: a SYN answered, or an
// RST dropped, on the worker (tcp.Endpoint.AnswerSyn, IgnoreRst), reports
// true.
func (f *Demux) offerSyn(q *queue, frame []byte, sg *segment, tep *tcp.Endpoint) bool {
	flags := sg.th.Flags()
	return flags&(header.TCPFlagSyn|header.TCPFlagAck|header.TCPFlagRst|header.TCPFlagFin) == header.TCPFlagSyn &&
		f.answerSyn(q, frame, sg.ipLen, sg.th, &sg.id, tep) || tep.IgnoreRst(flags)
}

// queue queues the segment to ep as netstack's IP layer would have.
func (f *Demux) queue(q *queue, frame []byte, v *buffer.View, ep gstack.TransportEndpoint, sg *segment) bool {
	var payload buffer.Buffer
	if v != nil {
		v.TrimFront(ethHeaderLen)
		v.CapLength(sg.total)
		payload = buffer.MakeWithView(v)
	} else {
		payload = buffer.MakeWithData(frame[ethHeaderLen : ethHeaderLen+sg.total])
	}
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: payload})
	defer pkt.DecRef()
	pkt.NetworkProtocolNumber = sg.proto
	pkt.TransportProtocolNumber = header.TCPProtocolNumber
	pkt.NetworkHeader().Consume(sg.ipLen)
	if !parse.TCP(pkt) {
		return false
	}
	pkt.NICID = f.nic
	pkt.PktType = tcpip.PacketHost
	pkt.RXChecksumValidated = true
	pkt.Deferrer = &q.deferred
	f.count()
	f.tcp.QueuePacket(ep, sg.id, pkt)
	return true
}

// count counts a delivered packet as the skipped IP layer would have.
func (f *Demux) count() {
	f.received.Increment()
	f.valid.Increment()
	f.delivered.Increment()
}

// flowCache remembers the established connections early demux found
// lately, so that their next segments skip the demuxer's lookup (a read
// lock and two hash tables): a direct-mapped table per queue, used by its
// worker only. An entry counts only while its connection is established:
// an established connection is the only endpoint the demuxer finds for
// its four-tuple. Entries are overwritten, never cleared; one can keep a
// closed connection's endpoint from the collector until then.
type flowCache [flowCacheSize]flowSlotEntry

// flowSlotEntry is one connection in a flowCache, with its owner (for the
// owned fast path) as of ownersGen.
type flowSlotEntry struct {
	id       gstack.TransportEndpointID
	ep       *tcp.Endpoint
	owner    Owner
	ownerGen uint64
}

const flowCacheSize = 256

// flowSlot is id's entry in a flowCache.
func flowSlot(id *gstack.TransportEndpointID) int {
	a := id.RemoteAddress.AsSlice()
	h := uint32(id.RemotePort)*0x9e3779b1 ^ uint32(id.LocalPort)*0x85ebca6b ^ uint32(a[len(a)-1])*0xc2b2ae35
	return int(h>>24) % flowCacheSize
}

// SYNs answered on the worker (tcp.Endpoint.AnswerSyn). A SYN that a
// listener answers with a SYN cookie leaves nothing behind, so the worker
// answers it where early demux finds the listener: netstack's listener
// computes the SYN-ACK's TCP header (cookie, options, window) straight
// into a UMEM frame, and the worker adds the Ethernet and IP headers and
// the checksums and puts it on the TX ring; the batch's one kick sends
// it. No segment, queueing, route or packet buffer is made for it. The
// handshake's last ACK goes the ordinary way: the listener validates the
// cookie and creates the connection.
//
// The frame goes where netstack's route would send it. To a peer on one
// of ustack's on-link prefixes: back to the MAC the SYN came from, as an
// XDP SYN proxy answers. To any other: through the default router of its
// family, the route's next hop, at the MAC netstack's neighbour cache
// holds for it (a flood's spoofed sources arrive through a router, and
// the SYN's own source MAC is only the last hop's, which need not be the
// way back). Anything else (no router, its MAC not resolved yet, cookies
// not in use, the listener busy) takes netstack's path.

// The worker's own verdicts beside netstack's tcp.SynVerdict ones.
const (
	// SynMissRoute: a peer off ustack's prefixes with no default router
	// of its family, or a frame from a multicast MAC.
	SynMissRoute = tcp.NumSynVerdicts + iota
	// SynMissUnresolved: an off-link peer whose router's MAC netstack
	// has not resolved yet (the lookup starts resolving it).
	SynMissUnresolved
	// NumSynVerdicts is how many verdicts queue.synFast counts.
	NumSynVerdicts
)

// answerSyn offers listener ep the SYN th, received in frame with an IP
// header of ipLen bytes, and reports whether the SYN is dealt with
// (answered, or dropped as the listener would drop it).
func (f *Demux) answerSyn(q *queue, frame []byte, ipLen int, th header.TCP, id *gstack.TransportEndpointID, ep *tcp.Endpoint) bool {
	if frame[6]&1 != 0 {
		q.synFast[SynMissRoute].Add(1)
		return false
	}
	var dst [6]byte // the SYN-ACK's destination MAC
	if f.onLink(id.RemoteAddress) {
		copy(dst[:], frame[6:12])
	} else if v := f.nextHop(q, ipLen, id, &dst); v != tcp.NumSynVerdicts {
		q.synFast[v].Add(1)
		return false
	}
	// The TCP header first, outside the TX lock that writers of replies
	// take (the cookie's hashes are the longest part of the answer).
	var hdr [header.TCPHeaderMaximumSize]byte
	// Falling behind, the worker answers with a cookie whatever the
	// listener's backlog: a SYN a frame or two back in a burst costs a
	// tenth of netstack's half-open connection, and the burst's later
	// frames find the fill ring fed.
	pressure := int64(q.io.RxBacklog()) >= q.rxPressure.Load()
	syn, v := ep.AnswerSyn(*id, f.nic, th, hdr[:], pressure)
	q.synFast[v].Add(1)
	if v != tcp.SynAnswered {
		return v == tcp.SynDropped
	}
	if pressure {
		q.synPressure.Add(1)
	}
	if f.cookieSyn != nil && ipLen == header.IPv4MinimumSize {
		f.cookieSyn(*id, syn)
	}
	l4 := ethHeaderLen + ipLen
	q.txMu.Lock()
	defer q.txMu.Unlock()
	addr, ok := q.allocFrame()
	if !ok {
		// No TX frame: the SYN-ACK is lost as if on the wire, and the
		// peer sends its SYN again.
		q.txNoFrame.Add(1)
		return true
	}
	out := q.io.Frame(addr)
	// Ethernet: back to where the SYN came from, or to the router.
	copy(out[0:6], dst[:])
	copy(out[6:12], f.mac)
	copy(out[12:14], frame[12:14])
	if ipLen == header.IPv4MinimumSize {
		ip := header.IPv4(out[ethHeaderLen:l4])
		ip.Encode(&header.IPv4Fields{
			TotalLength: uint16(header.IPv4MinimumSize + syn.Len),
			TTL:         syn.TTL,
			TOS:         syn.TOS,
			Protocol:    uint8(header.TCPProtocolNumber),
			Flags:       header.IPv4FlagDontFragment,
			SrcAddr:     id.LocalAddress,
			DstAddr:     id.RemoteAddress,
		})
		ip.SetChecksum(^ip.CalculateChecksum())
	} else {
		header.IPv6(out[ethHeaderLen:l4]).Encode(&header.IPv6Fields{
			PayloadLength:     uint16(syn.Len),
			TransportProtocol: header.TCPProtocolNumber,
			HopLimit:          syn.TTL,
			TrafficClass:      syn.TOS,
			SrcAddr:           id.LocalAddress,
			DstAddr:           id.RemoteAddress,
		})
	}
	tcpHdr := header.TCP(out[l4 : l4+copy(out[l4:], hdr[:syn.Len])])
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, id.LocalAddress, id.RemoteAddress, uint16(syn.Len))
	tcpHdr.SetChecksum(^checksum.Checksum(tcpHdr, xsum))
	if !q.enqueueOne(addr, l4+syn.Len) {
		// TX ring full: lost as if on the wire too.
		q.txNoFrame.Add(1)
		return true
	}
	q.txPackets.Add(1)
	f.sent.Increment()
	return true
}

// SynVerdict is a verdict synFast counts: a tcp.SynVerdict, or one of the
// worker's own.
type SynVerdict = tcp.SynVerdict

// onLink reports whether a is on one of ustack's prefixes.
func (f *Demux) onLink(a tcpip.Address) bool {
	ip, ok := netip.AddrFromSlice(a.AsSlice())
	if !ok {
		return false
	}
	for _, p := range f.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
