// Package stack runs netstack (ustack's patched copy of gVisor's, in
// internal/third_party/gvisor) over AF_XDP sockets and hands out
// net.Listener, net.Conn and net.PacketConn values backed by it.
//
// Layers, each using only those below it: the connection APIs
// (handler.go, workerpoll.go, tcpconn.go, listener.go, dial.go,
// udpconn.go) over the Stack (stack.go: netstack, its configuration, the
// owned ports, the middleware chain) over the link endpoint, package
// stack/internal/link: the queues, their workers, RX, TX, the kick
// protocol, early demux and the ready list. The latency breakdown is
// package stack/internal/trace; frame I/O and its middleware are the
// other packages under stack/internal.
//
// Data path, per queue of the interface (the files are package link's):
//
//	RX (rx.go): XDP program (package bpf) redirects owned frames to the
//	    queue's AF_XDP socket → the queue's worker goroutine takes a batch
//	    off the RX ring → verifies each TCP/UDP checksum once (package
//	    offload; bad ones are dropped here) → unless Config.Debug.NoGRO, merges runs
//	    of in-order segments of one TCP flow into one packet → copies each
//	    frame (or run) once into a netstack buffer → delivers it inline: a segment of an
//	    established IPv4 connection straight to that connection's queue
//	    (early demux, demux.go), anything else through netstack's
//	    layers → once the batch is in, processes every TCP connection it
//	    touched on the worker itself (run to completion), which wakes the
//	    application goroutines with data → reads the connections handed
//	    to it with PollOnWorker that the processing made readable
//	    (ready.go; workerpoll.go here: package qp's engines run there) → if a
//	    notification may have readied a goroutine (wake.go), yields to
//	    the goroutines so their replies are written before the next kick
//	    → recycles the batch. An idle spinning worker yields its P every
//	    16 empty polls if the workers may hold every P, every 8,192 if
//	    the process has more Ps than workers (a yield with idle Ps wakes
//	    another P's thread).
//	TX (tx.go): netstack writes from the writer's goroutine (the
//	    application's, or the worker's for ACKs) → the first packet's flow
//	    hash picks a queue → under that queue's TX lock each packet is
//	    copied once into a UMEM frame, its TCP/UDP checksum computed in
//	    the same pass, and a TCP packet of up to 64 KiB (netstack sends
//	    such GSO packets, the link advertising segmentation offload) cut
//	    into MSS-sized frames on the way (package offload's Tx) → the
//	    frames go on the TX ring → the kick
//	    (kick.go): while the worker spins it kicks once per loop for
//	    everything writers queued; a writer kicks itself when the worker
//	    is blocked or a full batch waits. ACKs are netstack's: delayed
//	    (Config.DelayedAck) so that they ride on the reply.
//
// The worker's polling policy (Spin, Adaptive, Blocking) trades CPU for
// latency; see PollPolicy. Config.Trace records where a request's time
// goes (trace.go, over package trace).
//
// A queue's frame I/O goes through one interface (package frameio),
// which an AF_XDP socket implements on Linux (xskio_linux.go) and, for
// tests and NewPipe, an in-memory wire (package memwire): two ends
// sharing one arena of frames, each direction a ring of descriptors
// (package ring) plus a ring returning the frames to their sender. Like
// an AF_XDP socket in copy mode it delivers what was enqueued only after
// a kick, so the endpoint code under test is the code that runs over
// AF_XDP, kick policy included. NewPipe joins two stacks by such a wire
// for users' own tests.
//
// Middleware wraps a queue's frame I/O, as gVisor's link/sniffer and
// link/qdisc wrap a link endpoint, each in a package of its own under
// stack/internal, so the worker and TX code are the same with or without
// it (middleware.go builds the chain): Config.Faults adds package
// faultio's injector next to the wire (seeded drop, corruption,
// duplication, reordering, delay, per direction; it releases what it
// holds back on its own timer), and Config.Capture adds package pcapio's
// writer above it, so a capture shows what netstack sent and what the
// worker received. Stats and Close reach every layer through the
// interface's ReadStats and Close; the stack never names a layer's type.
// Neither layer is in the chain unless configured. Stats counts everything,
// Stats.Summary prints it, and package metrics exports it to Prometheus.
//
// Handlers (handler.go) are the run-to-completion API: a connection
// served by a Handler has no goroutine; the worker that processed its
// segments calls OnTraffic with netstack's bytes (the endpoint unlocked,
// through tcp.Endpoint.ReadFunc) and the handler's Write runs netstack's
// send path down to the TX ring before the worker polls again. Handler
// streams, handler listeners and PollOnWorker connections share the
// endpoint's ready list (package link's ready.go).
//
// TCP connections are ustack's own net.Conn (tcpconn.go) over netstack's
// endpoint, allocation-free per Read and Write. Beyond net.Conn (and
// CloseRead/CloseWrite) they offer, through an interface assertion (the
// interfaces of package capability, aliased here),
// PollOnWorker(consume, consumed, done) (WorkerPoller), which hands the
// connection's reading to the worker, TryWrite(b) (TryWriter), a Write that never waits, and
// WriteLent/TryWriteLent (LendWriter), writes whose bytes netstack reads
// in place until they are acknowledged instead of copying them (lend.go):
// what a protocol engine running on the worker needs. As sockets listen and
// dial, their (address, protocol, port) is added to the XDP program's
// owned_ports table, and removed once the connection has finished
// closing, so unrelated traffic to the same address keeps going to the
// kernel.
package stack
