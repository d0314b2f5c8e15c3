// Package frameio is the frame I/O a ustack queue drives: the interface
// an AF_XDP socket, the in-memory wire and the middleware between them
// and the stack (fault injection, packet capture) all implement.
//
// Frames move in the shape of an AF_XDP socket's rings. RX: Receive
// hands the worker descriptors of received frames, Data maps one to its
// bytes, Recycle gives them back, Refill tops up the fill ring. TX:
// Alloc takes a free frame, Frame maps its address to the whole frame
// for writing, Enqueue puts written frames on the TX ring (taking
// ownership of those it accepts), Complete reaps sent frames, and Kick
// asks the kernel (or the wire) to send what is queued.
//
// Middleware wraps an IO the way gVisor's link/sniffer wraps a link
// endpoint: it embeds or holds the IO below it, changes what it must,
// and forwards the rest, so the stack drives a chain of any length
// through this one interface. The roles every layer plays beyond moving
// frames are methods here too, so the stack never names a layer's type:
// ReadStats (each layer adds its counters and asks the layer below),
// Close (each layer gives back what it holds, then closes the layer
// below) and Kick.
package frameio
