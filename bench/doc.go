// Command bench is ustack's echo benchmark against the kernel's TCP.
//
// It builds its own topology (two new network namespaces joined by a veth
// pair), then runs each contender in turn on that same pair with the same
// client code and message sizes:
//
//	kernel           Go net echo server on the kernel's TCP, default settings
//	kernel-busypoll  kernel TCP, SO_BUSY_POLL on every socket and spinning
//	                 non-blocking reads at both ends
//	ustack           the same echo server on a ustack listener (spin polling)
//	ustack-adaptive  ustack with adaptive polling
//	ustack-blocking  ustack with blocking polling
//	ustack-ustack    ustack at both ends
//	gvisor-xdp       gVisor netstack over gVisor's own AF_XDP endpoint
//	floor            a raw AF_XDP UDP reflector: no TCP/IP stack at all
//	floor-asavie     the same reflector over github.com/asavie/xdp v0.3.3
//	                 instead of ustack's xsk (bench/internal/asavie)
//
// Workloads: single-connection ping-pong at several sizes (RTT percentiles
// from an HDR histogram) and N connections for requests/s against an echo
// server, and a single-flow one-way bulk transfer for Gbit/s against a
// discard server, each with server and client CPU time. Queue pairs
// (package qp) over each contender's TCP: perftest's write_lat, polled
// (qp) and answered from OnInput handlers (qp-handler), beside the
// ping-pong of the same sizes, and write_bw with 64 KiB Writes (qp-bw)
// beside the bulk transfer.
// Servers and clients run as separate processes inside the namespaces;
// every figure is also given as a ratio to the kernel contender of the
// same run. Output: a table on the terminal, results.json, rtt_cdf.png and
// bars.png in -out.
//
//	go run ./bench            # full run, a few minutes
//	go run ./bench -quick     # under a minute, for smoke tests
package main
