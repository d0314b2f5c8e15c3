// Command bench is ustack's echo benchmark against the kernel's TCP.
//
// It builds its own topology (two new network namespaces joined by a veth
// pair), then runs each contender in turn on that same pair with the same
// client code and message sizes. The contenders of record, which run by
// default:
//
//	kernel           Go net echo server on the kernel's TCP, default settings
//	kernel-busypoll  kernel TCP, SO_BUSY_POLL on every socket and spinning
//	                 non-blocking reads at both ends
//	kernel-gnet      gnet v2's event loop on the kernel's TCP (echo and
//	                 discard in OnTraffic), the peer a Go developer picks
//	                 for lower latency than net
//	ustack           the same echo server on a ustack listener (spin polling)
//	ustack-1p        the same with GOMAXPROCS=1
//	ustack-ustack    ustack at both ends
//	ustack-handler   ustack's run-to-completion handler API (stack.Handler):
//	                 the echo runs on the worker, no goroutine per connection
//	ustack-ustack-handler
//	                 handlers at both ends, their connections carried by
//	                 ustack's owned fast path
//	ustack-ustack-handler-netstack
//	                 the same on netstack's fast path: the owned path's
//	                 before
//	floor            raw AF_XDP code, no TCP/IP stack (internal/reflector):
//	                 a UDP reflector answering a kernel client, a sink for
//	                 MTU-sized datagrams a kernel socket blasts (bulk) and a
//	                 source streaming them to a kernel socket (bulk-s2c)
//	floor-floor      the reflector driven by the same raw AF_XDP code at the
//	                 client's end: the round-trip limit for ustack-ustack
//	floor-tcp        the floor echoing a kernel client's TCP with no
//	                 connection state: the round-trip limit for a server of
//	                 a kernel TCP client, whose TCP costs it more than UDP
//
// and with -all the rest: ustack-adaptive, ustack-blocking, gvisor-xdp
// (gVisor netstack over gVisor's own AF_XDP endpoint), floor-asavie (the
// reflector over github.com/asavie/xdp v0.3.3, bench/internal/asavie),
// floor-1us/2us/4us (the floor answering late), floor-tcp-spin,
// ustack-handler-spin and ustack-1p-spin (a kernel TCP client that spins
// instead of sleeping: SO_BUSY_POLL and spinning reads, set against
// floor-tcp-spin), ustack-no-gro/-no-gso/-no-tx-checksum (one offload
// off) and ustack-handoff (netstack's own hand-offs and immediate ACKs).
//
// Workloads: single-connection ping-pong at several sizes (RTT percentiles
// from a log-linear histogram) and N connections for requests/s against an echo
// server, and a single-flow one-way bulk transfer each way (Gbit/s; the
// floor's also in frames/s), N connections held idle (connections/s,
// memory per connection), each with server and client CPU time. Queue
// pairs (package qp) over each contender's TCP: perftest's write_lat,
// polled (qp) and answered from OnInput handlers (qp-handler), beside the
// ping-pong of the same sizes, and write_bw with 64 KiB Writes (qp-bw)
// beside the bulk transfer.
//
// Placement: by default every server runs on the last CPU this process
// may use and every client on the others, as on two hosts (the placement
// of record); -shared lets the scheduler place them. A one-CPU process
// fails in the default placement and says to use -shared.
//
// Servers and clients run as separate processes inside the namespaces;
// every figure is also given as a ratio to the kernel contender of the
// same run (×k) and to its floor (×floor: floor-tcp for a kernel TCP
// client's round trip, floor for another kernel socket's, floor-floor for
// an AF_XDP client's, the floor's bulk in the same direction). Output: a table on the terminal, results.json,
// rtt_cdf.png and bars.png in -out.
//
// Adding a contender is an entry in allContenders (run.go), plus a server
// kind in startServer (servers.go) or a client kind in clientDialer
// (roles.go) when it needs a new one.
//
//	go run ./bench            # contenders of record, every workload, ≤ 5 minutes
//	go run ./bench -quick     # under a minute, for smoke tests
//	go run ./bench -all       # every contender
package main
