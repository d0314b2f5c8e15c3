//go:build ignore

// ustack's XDP steering program. It redirects to the AF_XDP socket of the
// receiving queue only the frames for what ustack owns, and passes all other
// traffic to the kernel untouched. See doc.go for the tables and verdicts.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char __license[] SEC("license") = "Dual MIT/GPL";

#define MAX_QUEUES 64 // bpf.MaxQueues; TestMapSizesMatchGo checks it

// Flags of an owned address (values of owned_addrs): OwnFlags in types.go,
// exercised against a Go reference by TestPrivilegedRunMatchesReference.
#define OWN_ALL   (1 << 0) // every IP packet to the address
#define OWN_NEIGH (1 << 1) // ARP for it, NDP solicitations for it, adverts to it
#define OWN_ICMP  (1 << 2) // ICMP and ICMPv6 (non-NDP) to it
#define OWN_FRAGS (1 << 3) // IP fragments to it

// Counter slots: Reason in types.go (TestMapSizesMatchGo, RunMatchesReference).
enum reason {
	R_PASS_NOT_IP = 0,  // neither IPv4, IPv6 nor ARP (includes VLAN-tagged)
	R_PASS_MALFORMED,   // truncated or invalid headers
	R_PASS_NOT_OWNED,   // well-formed, not ours
	R_PASS_NO_SOCKET,   // ours, but no AF_XDP socket on this queue
	R_REDIRECT_ADDR,    // destination address owned with OWN_ALL
	R_REDIRECT_PORT,    // (address, protocol, port) owned
	R_REDIRECT_NEIGH,   // ARP / NDP for an owned address
	R_REDIRECT_ICMP,    // ICMP to an owned address
	R_REDIRECT_FRAG,    // IP fragment to an owned address
	R_MAX,
};

struct addr_key {
	__u8 family; // 4 or 6
	__u8 pad[3];
	__u8 addr[16]; // IPv4 in the first four bytes, the rest zero
};

struct port_key {
	__u8 family;
	__u8 proto;   // IPPROTO_TCP or IPPROTO_UDP
	__be16 port;  // network byte order
	__u8 addr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct addr_key);
	__type(value, __u32);
} owned_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct port_key);
	__type(value, __u32);
} owned_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, R_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline int count(__u32 r, int action)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &r);
	if (c)
		*c += 1;
	return action;
}

static __always_inline int redirect(struct xdp_md *ctx, __u32 r)
{
	__u32 q = ctx->rx_queue_index;
	count(r, 0);
	if (!bpf_map_lookup_elem(&xsks, &q))
		return count(R_PASS_NO_SOCKET, XDP_PASS);
	return bpf_redirect_map(&xsks, q, XDP_PASS);
}

static __always_inline __u32 addr_flags(struct addr_key *k)
{
	__u32 *f = bpf_map_lookup_elem(&owned_addrs, k);
	return f ? *f : 0;
}

static __always_inline int port_owned(__u8 family, __u8 proto, __be16 port, const __u8 *addr)
{
	struct port_key k;
	__builtin_memset(&k, 0, sizeof(k));
	k.family = family;
	k.proto = proto;
	k.port = port;
	if (family == 4)
		__builtin_memcpy(k.addr, addr, 4);
	else
		__builtin_memcpy(k.addr, addr, 16);
	return bpf_map_lookup_elem(&owned_ports, &k) != 0;
}

#define ETH_HLEN_ 14
#define ARP_LEN 28

static __always_inline int handle_arp(struct xdp_md *ctx, __u8 *p, __u8 *end)
{
	// Ethernet/IPv4 ARP: htype(2) ptype(2) hlen(1) plen(1) op(2)
	// sha(6) spa(4) tha(6) tpa(4).
	if (p + ARP_LEN > end)
		return count(R_PASS_MALFORMED, XDP_PASS);
	if (p[0] != 0 || p[1] != 1 || p[2] != 0x08 || p[3] != 0 || p[4] != 6 || p[5] != 4)
		return count(R_PASS_NOT_OWNED, XDP_PASS);
	struct addr_key k;
	__builtin_memset(&k, 0, sizeof(k));
	k.family = 4;
	__builtin_memcpy(k.addr, p + 24, 4);
	if (addr_flags(&k) & OWN_NEIGH)
		return redirect(ctx, R_REDIRECT_NEIGH);
	return count(R_PASS_NOT_OWNED, XDP_PASS);
}

static __always_inline int handle_ipv4(struct xdp_md *ctx, __u8 *p, __u8 *end)
{
	if (p + 20 > end)
		return count(R_PASS_MALFORMED, XDP_PASS);
	__u8 ihl = (p[0] & 0x0f) * 4;
	if ((p[0] >> 4) != 4 || ihl < 20)
		return count(R_PASS_MALFORMED, XDP_PASS);
	__u16 tot = ((__u16)p[2] << 8) | p[3];
	if (tot < ihl || p + ihl > end)
		return count(R_PASS_MALFORMED, XDP_PASS);

	struct addr_key k;
	__builtin_memset(&k, 0, sizeof(k));
	k.family = 4;
	__builtin_memcpy(k.addr, p + 16, 4);
	__u32 flags = addr_flags(&k);
	if (flags & OWN_ALL)
		return redirect(ctx, R_REDIRECT_ADDR);

	__u16 frag = (((__u16)p[6] << 8) | p[7]) & 0x3fff; // MF | offset
	__u8 proto = p[9];
	if (frag) {
		if (flags & OWN_FRAGS)
			return redirect(ctx, R_REDIRECT_FRAG);
		return count(R_PASS_NOT_OWNED, XDP_PASS);
	}
	if (proto == IPPROTO_ICMP) {
		if (flags & OWN_ICMP)
			return redirect(ctx, R_REDIRECT_ICMP);
		return count(R_PASS_NOT_OWNED, XDP_PASS);
	}
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return count(R_PASS_NOT_OWNED, XDP_PASS);
	__u8 *l4 = p + ihl;
	if (l4 + 4 > end)
		return count(R_PASS_MALFORMED, XDP_PASS);
	__be16 dport;
	__builtin_memcpy(&dport, l4 + 2, 2);
	if (port_owned(4, proto, dport, k.addr))
		return redirect(ctx, R_REDIRECT_PORT);
	return count(R_PASS_NOT_OWNED, XDP_PASS);
}

#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_ICMPV6 58
#define NDISC_NS 135
#define NDISC_NA 136

static __always_inline int handle_ipv6(struct xdp_md *ctx, __u8 *p, __u8 *end)
{
	if (p + 40 > end)
		return count(R_PASS_MALFORMED, XDP_PASS);
	if ((p[0] >> 4) != 6)
		return count(R_PASS_MALFORMED, XDP_PASS);

	struct addr_key k;
	__builtin_memset(&k, 0, sizeof(k));
	k.family = 6;
	__builtin_memcpy(k.addr, p + 24, 16);
	__u32 flags = addr_flags(&k);
	if (flags & OWN_ALL)
		return redirect(ctx, R_REDIRECT_ADDR);

	__u8 next = p[6];
	__u8 *l4 = p + 40;
	if (next == NEXTHDR_ICMPV6) {
		if (l4 + 4 > end)
			return count(R_PASS_MALFORMED, XDP_PASS);
		__u8 type = l4[0];
		if (type == NDISC_NS) {
			// Solicitations go to a solicited-node multicast address:
			// match on the target address instead.
			if (l4 + 24 > end)
				return count(R_PASS_MALFORMED, XDP_PASS);
			struct addr_key t;
			__builtin_memset(&t, 0, sizeof(t));
			t.family = 6;
			__builtin_memcpy(t.addr, l4 + 8, 16);
			if (addr_flags(&t) & OWN_NEIGH)
				return redirect(ctx, R_REDIRECT_NEIGH);
			return count(R_PASS_NOT_OWNED, XDP_PASS);
		}
		if (type == NDISC_NA) {
			if (flags & OWN_NEIGH)
				return redirect(ctx, R_REDIRECT_NEIGH);
			return count(R_PASS_NOT_OWNED, XDP_PASS);
		}
		if (type >= 133 && type <= 137) // RS, RA, redirect: the host's
			return count(R_PASS_NOT_OWNED, XDP_PASS);
		if (flags & OWN_ICMP)
			return redirect(ctx, R_REDIRECT_ICMP);
		return count(R_PASS_NOT_OWNED, XDP_PASS);
	}
	if (next == NEXTHDR_FRAGMENT) {
		if (flags & OWN_FRAGS)
			return redirect(ctx, R_REDIRECT_FRAG);
		return count(R_PASS_NOT_OWNED, XDP_PASS);
	}
	if (next != IPPROTO_TCP && next != IPPROTO_UDP)
		return count(R_PASS_NOT_OWNED, XDP_PASS);
	if (l4 + 4 > end)
		return count(R_PASS_MALFORMED, XDP_PASS);
	__be16 dport;
	__builtin_memcpy(&dport, l4 + 2, 2);
	if (port_owned(6, next, dport, k.addr))
		return redirect(ctx, R_REDIRECT_PORT);
	return count(R_PASS_NOT_OWNED, XDP_PASS);
}

// xdp.frags: the program accepts multi-buffer packets (a veth or NIC with
// an MTU larger than a page, sockets bound with XDP_USE_SG). It reads only
// headers, which are in the first buffer.
SEC("xdp.frags")
int ustack_xdp(struct xdp_md *ctx)
{
	__u8 *p = (__u8 *)(long)ctx->data;
	__u8 *end = (__u8 *)(long)ctx->data_end;

	if (p + ETH_HLEN_ > end)
		return count(R_PASS_MALFORMED, XDP_PASS);
	__u16 proto = ((__u16)p[12] << 8) | p[13];
	p += ETH_HLEN_;
	switch (proto) {
	case ETH_P_ARP:
		return handle_arp(ctx, p, end);
	case ETH_P_IP:
		return handle_ipv4(ctx, p, end);
	case ETH_P_IPV6:
		return handle_ipv6(ctx, p, end);
	}
	return count(R_PASS_NOT_IP, XDP_PASS);
}
