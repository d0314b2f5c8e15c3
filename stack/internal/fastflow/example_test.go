package fastflow_test

import (
	"fmt"

	"github.com/ustack-dev/ustack/stack/internal/fastflow"
)

// A server flow receives a request from the frame it arrived in, and its
// handler's reply is cut into a transmit frame carrying the ACK.
func Example() {
	slab, _ := fastflow.NewSlab(fastflow.SlabConfig{Flows: 2, RingSize: 4096})
	client, _ := slab.Alloc()
	server, _ := slab.Alloc()
	cring, _ := slab.AllocRing() // a send ring each, while bytes are in flight
	sring, _ := slab.AllocRing()
	c, s := fastflow.State{
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 2},
		SrcIP: [4]byte{198, 18, 0, 1}, DstIP: [4]byte{198, 18, 0, 2}, SrcPort: 40000, DstPort: 7, TTL: 64,
		SndUna: 1001, SndNxt: 1001, SndWnd: 65535, SndWL1: 5001, MSS: 1460, Cwnd: 14600,
		RcvNxt: 5001, RcvEdge: 5001 + 65535, RcvSpace: 65535, LastAckSent: 5001,
	}, fastflow.State{
		SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1},
		SrcIP: [4]byte{198, 18, 0, 2}, DstIP: [4]byte{198, 18, 0, 1}, SrcPort: 7, DstPort: 40000, TTL: 64,
		SndUna: 5001, SndNxt: 5001, SndWnd: 65535, SndWL1: 1001, MSS: 1460, Cwnd: 14600,
		RcvNxt: 1001, RcvEdge: 1001 + 65535, RcvSpace: 65535, LastAckSent: 1001,
	}
	if err := slab.Flow(client).Init(&c); err != nil {
		panic(err)
	}
	if err := slab.Flow(server).Init(&s); err != nil {
		panic(err)
	}
	clk := fastflow.ClockAt(1_000_000) // one clock reading per batch
	frame := make([]byte, 2048)

	cf := slab.Flow(client)
	cf.Write(slab.Ring(cring), []byte("ping"))
	n, _ := cf.Cut(frame, slab.Ring(cring), clk)

	sf := slab.Flow(server)
	in, r := sf.Receive(frame[:n], clk)
	fmt.Printf("server got %q (%v)\n", in.Payload, r)
	sf.Write(slab.Ring(sring), []byte("pong")) // the handler's reply
	n, _ = sf.Cut(frame, slab.Ring(sring), clk)

	in, r = cf.Receive(frame[:n], clk)
	fmt.Printf("client got %q (%v), %d bytes acknowledged\n", in.Payload, r, in.Acked)
	// Output:
	// server got "ping" (ok)
	// client got "pong" (ok), 4 bytes acknowledged
}
