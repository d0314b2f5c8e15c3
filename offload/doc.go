// Package offload does in software what NICs offload, for a link whose
// frames ustack copies itself (AF_XDP in copy mode, or any frame ring):
//
//   - Checksums: the RFC 1071 Internet checksum (Sum, Fold, Checksum),
//     AVX-512 or AVX2 on amd64 with a pure-Go fallback (-tags purego),
//     IPv4 and IPv6 pseudo-headers, RFC 1624 incremental updates
//     (Update16, Update32), and CopySum, which copies and sums in one
//     pass.
//   - Transmit (Tx): a packet netstack hands down, as its buffer's views,
//     is written into transmit frames with its TCP or UDP checksum
//     computed during the copy; a TCP packet larger than its MSS (a GSO
//     packet) is cut into MSS-sized segments straight into the frames,
//     as a NIC's TSO would: IP lengths and IDs, sequence numbers, FIN and
//     PSH on the last segment only, CWR on the first only, checksums.
//   - Receive: Verify checks a frame's checksums once, so netstack need
//     not (Valid, Invalid, Unchecked; Partial for a veth peer's
//     CHECKSUM_PARTIAL). FindRun and Merge coalesce a batch's
//     in-order segments of one flow into one packet (GRO) on Linux's
//     rules; anything unusual passes as is.
//
// Sum works on unfolded 64-bit accumulators so partial sums over headers,
// pseudo-headers and payloads combine with Add; Fold turns an accumulator
// into the 16-bit one's-complement sum. Nothing here allocates per packet.
package offload
