// Package metrics exports a ustack Stack's counters to Prometheus: a
// Collector reads Stack.Stats and netstack's own counters
// (Stack.NetstackCounters) at scrape time (nothing is counted twice and
// the data path pays nothing for it), and Handler serves them, with the
// Go runtime's and the process's, in the text exposition format.
//
// Every counter of stack.Stats and stack.QueueStats is exported: the
// Collector walks those types by reflection, and a table in stats.go
// gives each field its metric name and help text (or says why it is not
// a counter, or which netstack counter it copies). A field added to Stats
// without an entry is still exported, under a name made from its path,
// and the package's tests fail until it has one.
//
// What is exported, all prefixed ustack_:
//   - per queue (label queue): frames received, packets sent and the
//     frames they took, drops by reason (label reason: runt,
//     bad_checksum in the worker; the AF_XDP socket's kernel counters),
//     partial checksums accepted, segments GRO coalesced, TX stalls,
//     inline TCP runs, and the socket's own counters (xsk_*);
//   - injected faults (labels queue, direction, fault) when Config.Faults
//     is set, and the capture's records when Config.Capture is;
//   - steering: the XDP program's packets per verdict reason (label
//     reason);
//   - netstack: every counter of gVisor's tcpip.Stats (IP, ARP, ICMP,
//     IGMP, TCP, UDP, NIC), named after its field path, e.g.
//     ustack_netstack_tcp_valid_segments_received_total; the
//     "Current…" ones are gauges;
//   - the latency breakdown's percentiles when Config.Trace is set.
package metrics
