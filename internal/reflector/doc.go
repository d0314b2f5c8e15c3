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
// direction. A Conn is the
// same packet code at a client's end, one UDP flow on an AF_XDP socket as
// a net.Conn, which drives a Floor for a round trip with no kernel stack
// at either end.
package reflector
