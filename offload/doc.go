// Package offload does in software what NICs offload: the RFC 1071
// Internet checksum and receive-side checksum verification of TCP and UDP
// packets. A worker verifies each received frame once with Verify, drops
// what is Invalid and marks what is Valid, and netstack (patched to honour
// the mark) does not checksum it again. Segmentation (GSO) and receive
// coalescing (GRO) are not implemented yet.
//
// Sum works on unfolded 64-bit accumulators so partial sums over headers,
// pseudo-headers and payloads combine with plain addition; Fold turns an
// accumulator into the 16-bit one's-complement checksum.
package offload
