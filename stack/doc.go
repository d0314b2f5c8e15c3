// Package stack runs gVisor's netstack over AF_XDP sockets and hands out
// net.Listener, net.Conn and net.PacketConn values backed by it.
//
// Data path, per queue of the interface:
//
//	RX: XDP program (package bpf) redirects owned frames to the queue's
//	    AF_XDP socket → the queue's worker goroutine takes a batch off the
//	    RX ring → copies each frame once into a netstack buffer → delivers
//	    it inline (DeliverNetworkPacket) → recycles the batch to the fill
//	    ring at once.
//	TX: netstack calls WritePackets from the writer's goroutine → the
//	    first packet's flow hash picks a queue → under that queue's TX lock
//	    each packet is copied once into a UMEM frame and put on the TX ring
//	    → after the lock is dropped, the kick (sendto): at once when the
//	    worker is not spinning or a full batch waits; otherwise left to the
//	    spinning worker's next loop, which kicks once for everything
//	    writers queued meanwhile, and for pure ACKs only after a short
//	    delay, so an ACK followed by the application's reply costs one
//	    kick.
//
// The worker's polling policy (Spin, Adaptive, Blocking) trades CPU for
// latency; see PollPolicy.
//
// A queue's frame I/O goes through the small port interface, which an
// AF_XDP socket implements on Linux and, for tests, an in-memory wire: two
// ends sharing one arena of frames, each direction a ring of descriptors
// (package ring) plus a ring returning the frames to their sender, with no
// kernel, no kick and no completion ring. The endpoint code under test is
// the code that runs over AF_XDP.
//
// As sockets listen and dial, their (address, protocol, port) is added to
// the XDP program's owned_ports table, and removed once the connection has
// finished closing, so unrelated traffic to the same address keeps going to
// the kernel.
package stack
