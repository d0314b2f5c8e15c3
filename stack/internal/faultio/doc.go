// Package faultio injects faults into a queue's frames: frame I/O
// middleware in the manner of gVisor's link/qdisc, for testing
// applications (and ustack) against a bad network.
//
// Each frame crossing a layer in a direction is, independently, dropped,
// corrupted, duplicated, reordered or delayed with the configured
// probabilities, drawn from a generator seeded per queue and direction,
// so the same seed, configuration and traffic give the same decisions.
// A TX hook (SetTxHook) can also see, change or drop every frame sent,
// for tests that need a particular segment lost.
//
// RX (the worker's goroutine): drops are recycled below at once;
// duplicates, reordered and delayed frames are copies in the layer's own
// frames (the frame below goes back at once), released by a later
// Receive, whose Wait wakes in time for them; Recycle returns the copies
// to the layer. TX (under the queue's TX lock, and the layer's own lock):
// drops are freed below; a duplicate takes a second frame below;
// reordered and delayed frames stay held in their own frames until a
// later frame has gone ahead (Enqueue) or their time comes, when the
// layer's own timer enqueues and kicks them. Close frees what is still
// held. No frame is ever lost.
package faultio
