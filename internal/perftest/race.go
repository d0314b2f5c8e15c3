//go:build race

package perftest

// RaceEnabled: the race detector is on. The latency and credit loops poll
// memory the queue pair writes from its own goroutine, as RDMA programs
// poll memory a NIC writes: a deliberate race the detector reports.
const RaceEnabled = true
