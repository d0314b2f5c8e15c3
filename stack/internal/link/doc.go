// Package link is ustack's netstack link endpoint: an Endpoint over a
// set of queues, each a frame I/O (package frameio: an AF_XDP socket, or
// a memory wire, with any middleware) driven by a worker goroutine of its
// own.
//
// A worker runs to completion (rx.go): it kicks what writers queued,
// takes a batch off the RX ring, verifies checksums once (package
// offload), coalesces a flow's in-order segments, copies each frame once
// into netstack, offering plain TCP segments of established connections
// and listeners to early demux first (demux.go: netstack's fast path and
// the SYNs answered on the worker), runs the TCP processing the batch
// calls for, runs what the connection APIs put on the ready list
// (ready.go), and yields its P to the goroutines it woke. Netstack writes
// from any goroutine (tx.go), one copy into a UMEM frame with the
// checksum in the copy. Who kicks the TX ring, and who wakes the worker,
// is kick.go's protocol; wake.go tells the worker when a notification
// may have readied a goroutine.
//
// Package stack builds an Endpoint from its Config (Options) and is the
// only importer; nothing here reaches back up but through netstack's
// interfaces, the ready list's run functions and the wait entries it
// hands out.
package link
