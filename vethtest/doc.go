// Package vethtest builds throwaway network topologies for tests,
// benchmarks and demos, in the spirit of net/http/httptest: two network
// namespaces created for the purpose, joined by a veth pair, with addresses
// from the RFC 2544 benchmarking ranges (198.18.0.0/15 and 2001:2::/48).
//
//	┌ namespace "ust-<id>-k" ┐          ┌ namespace "ust-<id>-u" ─────────┐
//	│ Kernel: uk<id>         │◀── veth ─▶│ Ustack: uu<id>                  │
//	│ 198.18.0.1, 2001:2::1  │          │ kernel's own: 198.18.0.2, ::2   │
//	└────────────────────────┘          │ for ustack:   198.18.0.10, ::10 │
//	                                     └─────────────────────────────────┘
//
// The Kernel host is the real peer (Linux TCP, ping, ordinary clients); TX
// checksum offload is turned off on its end so that what it sends carries
// full checksums. The Ustack host is where an XDP program and AF_XDP
// sockets attach; its kernel keeps an address of its own so tests can show
// that traffic ustack does not own still reaches the kernel.
//
// Everything is created through netlink and netns handles, never by running
// ip(8), and deleted by name on Close, which tests register with t.Cleanup
// before anything can fail.
package vethtest
