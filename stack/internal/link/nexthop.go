package link

import (
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
)

// nextHopMaxAge is how long the worker sends SYN-ACKs to a default
// router's MAC as netstack's neighbour cache last gave it before it asks
// the neighbour cache again. Asking costs the neighbour cache's lock and
// a map lookup, a tenth of the worker's own time for a SYN; once per
// nextHopMaxAge it is nothing even under a flood. The answer keeps
// neighbour unreachability detection going as before (a Stale entry is
// confirmed as any packet sent to it would confirm it), and a router
// whose MAC changes or is lost is followed within nextHopMaxAge, well
// under a SYN's first retransmission.
const nextHopMaxAge = 10 * time.Millisecond

// nextHopCache is one family's default router as the worker's SYN-ACKs to
// off-link peers see it (Demux.nextHop): its MAC, from netstack's
// neighbour cache, and when the neighbour cache gave it. One per queue
// and family; written by found, which runs on the worker or, when a
// lookup starts a resolution, on netstack's goroutine.
type nextHopCache struct {
	// mac is the router's MAC in the low 48 bits with bit 48 set; 0:
	// none (not resolved yet, or resolution failed).
	mac atomic.Uint64
	// at is when mac was given (busyClock).
	at atomic.Int64
	// pending is set while a call of found is due: the lookup under way,
	// or a resolution the lookup started.
	pending atomic.Bool
	// found is the neighbour cache's callback (made once: a method value
	// made per lookup would allocate).
	found func(gstack.LinkResolutionResult)
}

func (c *nextHopCache) init() { c.found = c.resolved }

// resolved takes the neighbour cache's answer to a lookup.
func (c *nextHopCache) resolved(r gstack.LinkResolutionResult) {
	defer c.pending.Store(false)
	if r.Err != nil || len(r.LinkAddress) != 6 {
		c.mac.Store(0)
		return
	}
	v := uint64(1) << 48
	for i := 0; i < 6; i++ {
		v |= uint64(r.LinkAddress[i]) << (8 * (5 - i))
	}
	c.at.Store(int64(busyClock()))
	c.mac.Store(v)
}

// nextHop puts in dst the MAC of the default router through which the
// SYN-ACK to id's off-link peer goes, and returns tcp.NumSynVerdicts, or
// the verdict that leaves the SYN to netstack: SynMissRoute with no
// router of the peer's family, SynMissUnresolved while its MAC is not
// known. The MAC comes from the queue's nextHopCache while it is younger
// than nextHopMaxAge, else from netstack's neighbour cache (lookupNextHop).
func (f *Demux) nextHop(q *queue, ipLen int, id *gstack.TransportEndpointID, dst *[6]byte) SynVerdict {
	fam, gw, proto := 0, f.gw4, header.IPv4ProtocolNumber
	if ipLen != header.IPv4MinimumSize {
		fam, gw, proto = 1, f.gw6, header.IPv6ProtocolNumber
	}
	if gw.BitLen() == 0 {
		return SynMissRoute
	}
	c := &q.nextHops[fam]
	mac := c.mac.Load()
	if mac == 0 || busyClock()-time.Duration(c.at.Load()) >= nextHopMaxAge {
		if v := f.lookupNextHop(c, gw, id.LocalAddress, proto); v != tcp.NumSynVerdicts {
			return v
		}
		if mac = c.mac.Load(); mac == 0 {
			return SynMissUnresolved
		}
	}
	for i := range dst {
		dst[i] = byte(mac >> (8 * (5 - i)))
	}
	return tcp.NumSynVerdicts
}

// lookupNextHop asks netstack's neighbour cache for router gw's MAC into c, and
// returns tcp.NumSynVerdicts if c holds it on return. With a MAC in the
// router's entry the neighbour cache calls c.found before it returns
// (confirming a Stale entry as any packet sent to it would); without, it
// queues the call for when resolution ends, and until then the SYNs go to
// netstack, counted as SynMissUnresolved: one queued call per queue and
// family, not one per SYN of a flood.
func (f *Demux) lookupNextHop(c *nextHopCache, gw, local tcpip.Address, proto tcpip.NetworkProtocolNumber) SynVerdict {
	if !c.pending.CompareAndSwap(false, true) {
		return SynMissUnresolved
	}
	switch err := f.ns.GetLinkAddress(f.nic, gw, local, proto, c.found); err.(type) {
	case nil:
		return tcp.NumSynVerdicts
	case *tcpip.ErrWouldBlock:
		return SynMissUnresolved
	default:
		c.pending.Store(false)
		return SynMissUnresolved
	}
}
