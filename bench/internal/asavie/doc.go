// Package asavie is the benchmark's floor-asavie contender: the raw ARP/UDP
// reflector of package reflector (the same Responder, so the same packet
// logic) over github.com/asavie/xdp v0.3.3, the AF_XDP package ustack's
// design card names, instead of over ustack's own package xsk. Comparing
// it with the floor contender measures only the socket code.
//
// It lives under bench/internal so that the dependency stays out of
// ustack's library packages. ustack's XDP program steers the traffic to
// its socket, as for the floor; asavie/xdp's own program (which takes every
// frame of the queue) is not used.
//
// What asavie/xdp does differently, as of v0.3.3: plain loads and stores of
// the ring indices (no acquire/release ordering), no need_wakeup (a sendto
// per Transmit call), a linear scan of a per-frame free map to find fill
// frames (GetDescs), one UMEM per socket, and a panic on an unexpected
// sendto error.
package asavie
