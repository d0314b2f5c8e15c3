// Package offload does in software what NICs offload: the RFC 1071
// Internet checksum and receive-side checksum verification of TCP
// segments, so that a worker can mark received segments as verified and
// netstack does not checksum them again. Segmentation (GSO) and receive
// coalescing (GRO) are not implemented yet.
//
// Sum works on unfolded 64-bit accumulators so partial sums over headers,
// pseudo-headers and payloads combine with plain addition; Fold turns an
// accumulator into the 16-bit one's-complement checksum.
package offload
