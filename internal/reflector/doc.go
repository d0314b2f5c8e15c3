// Package reflector is raw AF_XDP packet code with no TCP/IP stack: the
// floors of the echo benchmark, the least work any stack over the same
// path can do.
//
// A Reflector answers ARP requests for one IPv4 address and sends every
// IPv4 UDP datagram back to where it came from, rewriting the received
// frame in place and transmitting it from the same UMEM frame; it is also
// a test peer for package xsk. A Floor echoes TCP too, with no connection
// state (Responder.Reply: the floor of a TCP ping-pong), and adds a sink
// (datagrams counted and dropped) and a source (MTU-sized datagrams
// streamed to a requester) on the next two ports: the bulk floors in each
// direction. With Floor.Fresh its TCP echo copies each payload into a
// fresh transmit frame behind a per-flow header template, checksum in
// the copy, as a TCP must. On the sink's and the source's ports it also
// has a TCP sink and a TCP source for a kernel TCP client (the
// discard and source servers' protocols): the sink takes the stream in
// order and acknowledges it once a batch (at once past a hole, with
// SACK blocks), the source sends up to the right edge of the client's
// window from fresh frames, checksum in the copy; neither keeps more
// than sequence numbers and a header template per flow, nor has
// congestion control.
//
// The client ends are the same packet code on an AF_XDP socket of their
// own: a Conn is one UDP flow as a net.Conn (floor-floor); a TCPConn one
// TCP-shaped flow, segments cut into fresh frames with the timestamp
// option and no handshake (floor-floor-tcp, against a Fresh floor); Rate
// keeps many UDP flows' requests in flight from one socket (the request
// rate ceiling); BlastXDP and CountStreamXDP drive the sink and the
// source (the bulk ceilings, multi-buffer above a 3506-byte MTU). Blast
// and CountStream drive them from kernel UDP sockets instead.
package reflector
