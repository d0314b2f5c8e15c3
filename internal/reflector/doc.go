// Package reflector is a raw AF_XDP responder with no TCP/IP stack: it
// answers ARP requests for one IPv4 address and sends every IPv4 UDP
// datagram back to where it came from, rewriting the received frame in
// place and transmitting it from the same UMEM frame. It is the floor of
// the echo benchmark (the lowest round trip any stack over the same path
// can reach) and a test peer for package xsk.
package reflector
