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
	R_TX_SYNACK,        // a SYN answered here with a cookie (XDP_TX)
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

// SYN answering (syn.go): the listeners whose SYNs the program answers
// with a SYN cookie itself, and until when; the keys and clock base the
// cookie needs, the same as netstack's (tcp.SynKeys).
struct syn_answer {
	__u64 until_ns; // CLOCK_MONOTONIC (bpf_ktime_get_ns); 0 stops
	__u16 mss;      // the SYN-ACK's MSS option
	__u16 window;   // the SYN-ACK's window (unscaled)
	__u8 wscale;    // the listener's window scale, offered if the SYN asks
	__u8 flags;     // SYN_SACK: SACK-permitted offered if the SYN asks
	__u8 ttl;
	__u8 tos;
};

#define SYN_SACK (1 << 0)

struct syn_keys {
	__u64 cookie[2][2]; // SipHash keys (little-endian halves)
	__u64 ts[2];        // the timestamp offset's key
	__u64 mono_base_ns; // CLOCK_MONOTONIC at netstack's clock's zero
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct port_key);
	__type(value, struct syn_answer);
} syn_answers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct syn_keys);
} syn_keys SEC(".maps");

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

// SipHash-2-4 (Aumasson and Bernstein), over whole 64-bit words: the
// reference algorithm for messages whose length is a multiple of 8.
#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                        \
	do {                                                            \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                  \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                  \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

static __always_inline __u64 siphash2(const __u64 *k, __u64 m0, __u64 m1, int words)
{
	__u64 v0 = k[0] ^ 0x736f6d6570736575ULL;
	__u64 v1 = k[1] ^ 0x646f72616e646f6dULL;
	__u64 v2 = k[0] ^ 0x6c7967656e657261ULL;
	__u64 v3 = k[1] ^ 0x7465646279746573ULL;
	v3 ^= m0; SIPROUND; SIPROUND; v0 ^= m0;
	if (words == 2) {
		v3 ^= m1; SIPROUND; SIPROUND; v0 ^= m1;
	}
	__u64 b = (__u64)(words * 8) << 56;
	v3 ^= b; SIPROUND; SIPROUND; v0 ^= b;
	v2 ^= 0xff;
	SIPROUND; SIPROUND; SIPROUND; SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

// le64 reads 8 bytes as a little-endian word, as SipHash takes them.
static __always_inline __u64 le64(const __u8 *b)
{
	__u64 v = 0;
#pragma unroll
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static __always_inline __u16 csum_fold(__u64 c)
{
	c = (c & 0xffffffff) + (c >> 32);
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	return ~c;
}

// tcp_sum returns the folded complement of the sum over an IPv4 TCP
// segment of doff bytes, header only, and its pseudo-header: 0 when its
// checksum is correct; 0xffff for a length it does not take.
static __always_inline __u16 tcp_sum(__u8 *ip, __u8 *l4, __u8 *end, __u8 doff)
{
	__u8 ph[12];
	__builtin_memcpy(ph, ip + 12, 8);
	ph[8] = 0; ph[9] = IPPROTO_TCP; ph[10] = 0; ph[11] = doff;
	__u64 c = bpf_csum_diff(0, 0, (__be32 *)ph, 12, 0);
	switch (doff) {
#define SUM(n) case n: if (l4 + n > end) return 0xffff; c = bpf_csum_diff(0, 0, (__be32 *)l4, n, c); break;
	SUM(20) SUM(24) SUM(28) SUM(32) SUM(36) SUM(40) SUM(44) SUM(48) SUM(52) SUM(56) SUM(60)
#undef SUM
	default:
		return 0xffff;
	}
	return csum_fold(c);
}

// optscan is a SYN's options, copied out of the frame, as scan_option
// reads them one at a time (bpf_loop: the verifier checks the step once).
struct optscan {
	__u8 buf[40];
	__u32 len, pos;
	__u32 tsval;
	__u16 mss;
	__s8 ws;
	__u8 sack, ts;
};

// scan_option reads the option at s->pos as netstack's ParseSynOptions
// does, and moves past it; 1 ends the scan.
static long scan_option(__u32 i, void *arg)
{
	struct optscan *s = arg;
	__u32 pos = s->pos;
	if (pos >= s->len || pos >= sizeof(s->buf) - 1)
		return 1;
	__u8 kind = s->buf[pos];
	if (kind == 0)
		return 1;
	if (kind == 1) {
		s->pos = pos + 1;
		return 0;
	}
	__u8 len = s->buf[pos + 1];
	if (len < 2 || pos + len > s->len)
		return 1;
	if (kind == 2 && len == 4 && pos <= sizeof(s->buf) - 4) {
		s->mss = (__u16)s->buf[pos + 2] << 8 | s->buf[pos + 3];
	} else if (kind == 3 && len == 3 && pos <= sizeof(s->buf) - 3) {
		__u8 ws = s->buf[pos + 2];
		s->ws = ws > 14 ? 14 : ws;
	} else if (kind == 4 && len == 2) {
		s->sack = 1;
	} else if (kind == 8 && len == 10 && pos <= sizeof(s->buf) - 10) {
		s->ts = 1;
		s->tsval = (__u32)s->buf[pos + 2] << 24 | (__u32)s->buf[pos + 3] << 16 |
			   (__u32)s->buf[pos + 4] << 8 | s->buf[pos + 5];
	}
	s->pos = pos + len;
	return 0;
}

#define SYNACK_TCP_LEN 40 // options padded to 20 bytes, always
#define SYNACK_LEN (ETH_HLEN_ + 20 + SYNACK_TCP_LEN)
#define COOKIE_TS_WS_NONE 0xf // window-scale bits of a TSval: none
#define COOKIE_TS_SACK (1 << 4)
#define COOKIE_TS_LOW 0x3f

// answer_syn answers the IPv4 SYN at p (IP header of 20 bytes at ip, TCP
// header at l4) with the SYN-ACK a listener answering with a cookie
// sends (netstack's AnswerSyn, tcp.SynKeys): XDP_TX, or -1 to leave the
// SYN to the socket.
static __always_inline int answer_syn(struct xdp_md *ctx, __u8 *ip, __u8 *l4, __u8 *end)
{
	struct port_key pk;
	__builtin_memset(&pk, 0, sizeof(pk));
	pk.family = 4;
	pk.proto = IPPROTO_TCP;
	__builtin_memcpy(&pk.port, l4 + 2, 2);
	__builtin_memcpy(pk.addr, ip + 16, 4);
	struct syn_answer *a = bpf_map_lookup_elem(&syn_answers, &pk);
	if (!a)
		return -1;
	__u64 now = bpf_ktime_get_ns();
	if (now >= a->until_ns)
		return -1;
	__u32 zero = 0;
	struct syn_keys *k = bpf_map_lookup_elem(&syn_keys, &zero);
	if (!k || now < k->mono_base_ns)
		return -1;
	struct syn_answer ans = *a;

	// A SYN without payload whose checksum is correct; any other (a
	// local veth peer's partial checksum among them) goes to the worker,
	// which checks it as it checks every frame.
	__u8 doff = (l4[12] >> 4) * 4;
	if (doff < 20 || l4 + doff > end || (((__u16)ip[2] << 8) | ip[3]) != 20 + doff)
		return -1;
	if (tcp_sum(ip, l4, end, doff) != 0)
		return -1;

	// The SYN's options, as netstack's ParseSynOptions reads them.
	struct optscan os;
	__builtin_memset(&os, 0, sizeof(os));
	os.mss = 536; // header.TCPDefaultMSS
	os.ws = -1;
	__u32 olen = doff - 20;
	if (olen > sizeof(os.buf))
		return -1;
	if (olen > 0) {
		if (bpf_xdp_load_bytes(ctx, (long)l4 + 20 - (long)ctx->data, os.buf, olen))
			return -1;
		os.len = olen;
		bpf_loop(sizeof(os.buf), scan_option, &os, 0);
	}
	if (os.mss == 0)
		return -1; // netstack drops it
	__u16 mss = os.mss;
	int ws = os.ws, sack = os.sack, ts = os.ts;
	__u32 tsval = os.tsval;

	__u8 laddr[4], raddr[4], lport[2], rport[2];
	__builtin_memcpy(laddr, ip + 16, 4);
	__builtin_memcpy(raddr, ip + 12, 4);
	__builtin_memcpy(lport, l4 + 2, 2);
	__builtin_memcpy(rport, l4, 2);
	__u32 seq = (__u32)l4[4] << 24 | (__u32)l4[5] << 16 | (__u32)l4[6] << 8 | l4[7];

	// The cookie (tcp.SynKeys.MakeCookie): hashes of local address,
	// remote address, local port, remote port and the timestamp slot.
	__u64 mono = now - k->mono_base_ns;
	__u32 slot = (__u32)(mono / 1000000000ULL) >> 6 & 0xff;
	__u8 in[16];
	__builtin_memcpy(in, laddr, 4);
	__builtin_memcpy(in + 4, raddr, 4);
	__builtin_memcpy(in + 8, lport, 2);
	__builtin_memcpy(in + 10, rport, 2);
	in[12] = in[13] = in[14] = in[15] = 0;
	__u64 m0 = le64(in);
	__u32 h0 = siphash2(k->cookie[0], m0, le64(in + 8), 2);
	in[12] = slot >> 24;
	in[13] = slot >> 16;
	in[14] = slot >> 8;
	in[15] = slot;
	__u32 h1 = siphash2(k->cookie[1], m0, le64(in + 8), 2);
	__u32 mssidx = mss >= 1460 ? 3 : mss >= 1440 ? 2 : mss >= 1300 ? 1 : 0;
	__u32 cookie = h0 + seq + (slot << 24) + ((h1 + mssidx) & 0xffffff);

	// The TSval (netstack's cookieTSVal): the offset's clock with the
	// SYN's window scale and SACK-permitted in its low bits, moved back
	// a step if that put it ahead.
	__u32 tsv = 0;
	if (ts) {
		__u32 off = siphash2(k->ts, m0, 0, 1);
		__u32 nowts = (__u32)(mono / 1000000ULL) + off;
		__u32 opts = COOKIE_TS_WS_NONE;
		if (ws >= 0)
			opts = ws;
		if (sack && (ans.flags & SYN_SACK))
			opts |= COOKIE_TS_SACK;
		tsv = (nowts & ~(__u32)COOKIE_TS_LOW) | opts;
		if (opts > (nowts & COOKIE_TS_LOW))
			tsv -= COOKIE_TS_LOW + 1;
	}

	// Reshape the frame to the SYN-ACK's length and write it in place.
	__u8 smac[6], dmac[6];
	__u8 *eth = ip - ETH_HLEN_;
	if (eth[6] & 1)
		return -1; // from a multicast MAC: no way back
	__builtin_memcpy(dmac, eth + 6, 6);
	__builtin_memcpy(smac, eth, 6);
	// Growing, at the head: XDP guarantees headroom, not tailroom.
	int delta = SYNACK_LEN - (int)((long)end - (long)eth);
	if (delta > 0 && bpf_xdp_adjust_head(ctx, -delta))
		return -1;
	if (delta < 0 && bpf_xdp_adjust_tail(ctx, delta))
		return -1;
	__u8 *p = (__u8 *)(long)ctx->data;
	end = (__u8 *)(long)ctx->data_end;
	if (p + SYNACK_LEN > end)
		return -1;
	__builtin_memcpy(p, dmac, 6);
	__builtin_memcpy(p + 6, smac, 6);
	ip = p + ETH_HLEN_;
	ip[0] = 0x45;
	ip[1] = ans.tos;
	ip[2] = 0;
	ip[3] = 20 + SYNACK_TCP_LEN;
	ip[4] = ip[5] = 0; // ID: DF is set
	ip[6] = 0x40;
	ip[7] = 0;
	ip[8] = ans.ttl;
	ip[9] = IPPROTO_TCP;
	ip[10] = ip[11] = 0;
	__builtin_memcpy(ip + 12, laddr, 4);
	__builtin_memcpy(ip + 16, raddr, 4);
	__u8 *th = ip + 20;
	__builtin_memcpy(th, lport, 2);
	__builtin_memcpy(th + 2, rport, 2);
	th[4] = cookie >> 24; th[5] = cookie >> 16; th[6] = cookie >> 8; th[7] = cookie;
	__u32 ack = seq + 1;
	th[8] = ack >> 24; th[9] = ack >> 16; th[10] = ack >> 8; th[11] = ack;
	th[12] = (SYNACK_TCP_LEN / 4) << 4;
	th[13] = 0x12; // SYN, ACK
	th[14] = ans.window >> 8;
	th[15] = ans.window;
	th[16] = th[17] = th[18] = th[19] = 0; // checksum, urgent pointer
	// Options: MSS; with timestamps, window scale (if the SYN had it) and
	// SACK-permitted (if both allow), then the timestamps; without, no
	// more (nothing would bring them back), EOL and padding.
	__u8 *op = th + 20;
	__builtin_memset(op, 0, SYNACK_TCP_LEN - 20);
	op[0] = 2; op[1] = 4; op[2] = ans.mss >> 8; op[3] = ans.mss;
	if (ts) {
		if (ws >= 0) {
			op[4] = 1; op[5] = 3; op[6] = 3; op[7] = ans.wscale;
		} else {
			op[4] = op[5] = op[6] = op[7] = 1;
		}
		if (sack && (ans.flags & SYN_SACK)) {
			op[8] = 4; op[9] = 2;
		} else {
			op[8] = op[9] = 1;
		}
		op[10] = 8; op[11] = 10;
		op[12] = tsv >> 24; op[13] = tsv >> 16; op[14] = tsv >> 8; op[15] = tsv;
		op[16] = tsval >> 24; op[17] = tsval >> 16; op[18] = tsval >> 8; op[19] = tsval;
	}
	__u64 c = bpf_csum_diff(0, 0, (__be32 *)ip, 20, 0);
	__u16 ipsum = csum_fold(c);
	__builtin_memcpy(ip + 10, &ipsum, 2);
	__u8 ph[12];
	__builtin_memcpy(ph, laddr, 4);
	__builtin_memcpy(ph + 4, raddr, 4);
	ph[8] = 0; ph[9] = IPPROTO_TCP; ph[10] = 0; ph[11] = SYNACK_TCP_LEN;
	c = bpf_csum_diff(0, 0, (__be32 *)ph, 12, 0);
	c = bpf_csum_diff(0, 0, (__be32 *)th, SYNACK_TCP_LEN, c);
	__u16 tcpsum = csum_fold(c);
	__builtin_memcpy(th + 16, &tcpsum, 2);
	return count(R_TX_SYNACK, XDP_TX);
}

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
	if (!port_owned(4, proto, dport, k.addr))
		return count(R_PASS_NOT_OWNED, XDP_PASS);
	// A SYN alone (no ACK, RST or FIN), with no IP options, to a
	// listener whose SYNs are answered here.
	if (proto == IPPROTO_TCP && ihl == 20 && l4 + 20 <= end && (l4[13] & 0x17) == 0x02) {
		int v = answer_syn(ctx, p, l4, end);
		if (v >= 0)
			return v;
	}
	return redirect(ctx, R_REDIRECT_PORT);
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
