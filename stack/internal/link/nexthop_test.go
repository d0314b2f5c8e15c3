package link

import (
	"net/netip"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
)

// neighbours is a Netstack whose neighbour cache holds one entry, mac,
// for every address (none while empty), and counts the lookups.
type neighbours struct {
	Netstack
	mac     tcpip.LinkAddress
	lookups int
	// async, if set, has a lookup start a resolution: the call is kept
	// here, not made.
	async   bool
	pending func(gstack.LinkResolutionResult)
}

func (n *neighbours) GetLinkAddress(_ tcpip.NICID, _, _ tcpip.Address, _ tcpip.NetworkProtocolNumber, onResolve func(gstack.LinkResolutionResult)) tcpip.Error {
	n.lookups++
	if n.async || n.mac == "" {
		n.pending = onResolve
		return &tcpip.ErrWouldBlock{}
	}
	onResolve(gstack.LinkResolutionResult{LinkAddress: n.mac})
	return nil
}

// TestNextHopCached: the worker asks netstack's neighbour cache for the
// default router's MAC once per nextHopMaxAge, not once per SYN; it
// follows a changed MAC after that age, and stops using a MAC whose
// resolution failed.
func TestNextHopCached(t *testing.T) {
	macA := tcpip.LinkAddress([]byte{2, 0, 0, 0, 0, 0xa})
	macB := tcpip.LinkAddress([]byte{2, 0, 0, 0, 0, 0xb})
	ns := &neighbours{mac: macA}
	f := &Demux{ns: ns, gw4: tcpip.AddrFromSlice(netip.MustParseAddr("198.18.1.2").AsSlice())}
	q := &queue{}
	for fam := range q.nextHops {
		q.nextHops[fam].init()
	}
	id := &gstack.TransportEndpointID{LocalAddress: tcpip.AddrFromSlice(netip.MustParseAddr("198.18.1.1").AsSlice())}
	hop := func() (tcpip.LinkAddress, SynVerdict) {
		var dst [6]byte
		v := f.nextHop(q, header.IPv4MinimumSize, id, &dst)
		return tcpip.LinkAddress(dst[:]), v
	}
	for range 1000 {
		if mac, v := hop(); v != tcp.NumSynVerdicts || mac != macA {
			t.Fatalf("next hop %v, verdict %d; want %v", mac, v, macA)
		}
	}
	if ns.lookups != 1 {
		t.Fatalf("%d neighbour lookups for 1,000 SYNs within %v, want 1", ns.lookups, nextHopMaxAge)
	}

	// The router's MAC changes: followed once the cached one is
	// nextHopMaxAge old.
	ns.mac = macB
	q.nextHops[0].at.Add(-int64(nextHopMaxAge))
	if mac, v := hop(); v != tcp.NumSynVerdicts || mac != macB {
		t.Fatalf("after %v: next hop %v, verdict %d; want %v", nextHopMaxAge, mac, v, macB)
	}
	if ns.lookups != 2 {
		t.Fatalf("%d neighbour lookups, want 2", ns.lookups)
	}

	// The entry goes stale and its resolution fails: the SYNs go to
	// netstack meanwhile (one lookup under way, not one per SYN), and
	// the failed MAC is not used.
	ns.async = true
	q.nextHops[0].at.Add(-int64(nextHopMaxAge))
	for range 3 {
		if _, v := hop(); v != SynMissUnresolved {
			t.Fatalf("while resolving: verdict %d, want SynMissUnresolved (%d)", v, SynMissUnresolved)
		}
	}
	if ns.lookups != 3 {
		t.Fatalf("%d neighbour lookups, want 3", ns.lookups)
	}
	ns.pending(gstack.LinkResolutionResult{Err: &tcpip.ErrTimeout{}})
	ns.async, ns.mac = false, ""
	if _, v := hop(); v != SynMissUnresolved {
		t.Fatalf("after a failed resolution: verdict %d, want SynMissUnresolved (%d)", v, SynMissUnresolved)
	}

	// Resolved later: used again.
	ns.pending(gstack.LinkResolutionResult{LinkAddress: macA})
	ns.mac = macA
	before := ns.lookups
	for range 10 {
		if mac, v := hop(); v != tcp.NumSynVerdicts || mac != macA {
			t.Fatalf("resolved: next hop %v, verdict %d; want %v", mac, v, macA)
		}
	}
	if ns.lookups != before {
		t.Fatalf("%d neighbour lookups after the resolution, want none", ns.lookups-before)
	}

	// No router of the family: SynMissRoute, without a lookup.
	id6 := &gstack.TransportEndpointID{LocalAddress: tcpip.AddrFromSlice(netip.MustParseAddr("2001:db8::1").AsSlice())}
	var dst [6]byte
	if v := f.nextHop(q, header.IPv6MinimumSize, id6, &dst); v != SynMissRoute {
		t.Fatalf("IPv6 without a router: verdict %d, want SynMissRoute (%d)", v, SynMissRoute)
	}
}
