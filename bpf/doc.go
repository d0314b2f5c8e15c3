// Package bpf holds ustack's XDP steering program and its loader.
//
// The program (xdp.c, compiled by bpf2go into the committed ustack_bpf*.o)
// runs on every frame the interface receives and decides, from two tables
// ustack maintains at run time, whether the frame belongs to ustack:
//
//   - owned_addrs: address → OwnFlags. OwnAll takes every IP packet to the
//     address; OwnNeigh takes ARP for it, NDP solicitations whose target it
//     is and adverts sent to it; OwnICMP takes ICMP/ICMPv6 to it; OwnFrags
//     takes IP fragments to it.
//   - owned_ports: (address, TCP|UDP, port) → present. Updated as ustack
//     sockets listen, dial and close.
//
// A frame that is ours goes to the XSKMAP slot of the queue it arrived on
// (bpf_redirect_map with XDP_PASS as the fallback); everything else, and
// anything malformed, gets XDP_PASS, so the host's own traffic on the same
// interface is untouched. Per-CPU counters record one Reason per verdict.
//
// Not handled: VLAN-tagged frames and IPv6 extension headers other than a
// fragment header are passed to the kernel.
//
// Attach links the program to an interface through a bpf_link, so it
// detaches when the link is closed or the process dies.
package bpf
