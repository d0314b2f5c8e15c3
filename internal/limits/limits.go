// Package limits holds the bounds that several of ustack's packages share,
// so each is written once. bpf/xdp.c sizes its XSKMAP with the same number;
// a test in package bpf checks the compiled program against it.
package limits

// MaxQueues is the most interface queues ustack serves: the size of the
// steering program's XSKMAP, and the bound on stack.Config.Queues and on
// vethtest's queue count.
const MaxQueues = 64
