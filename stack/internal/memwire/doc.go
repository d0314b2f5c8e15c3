// Package memwire is an in-memory Ethernet wire: two ends of frame I/O
// whose frames live in one shared arena and travel through ring views
// (package ring), with no kernel involved.
//
// Each end transmits from frames of its own: Enqueue puts their
// descriptors on the ring to the peer and, like an AF_XDP socket in copy
// mode, the peer sees them only after a Kick, so the code under test is
// the code that runs over AF_XDP, kick policy included. The receiver
// hands the frames back through a return ring, from which the sender's
// Alloc takes them again. Faults and taps are package faultio's: the
// wire itself only moves frames.
package memwire
