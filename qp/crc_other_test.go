//go:build !amd64 || purego

package qp

import "testing"

// TestCPUPaths says which CRC32c loops the build runs (.ci/run shows it
// in CI's log): without assembly, hash/crc32's alone.
func TestCPUPaths(t *testing.T) {
	t.Logf("qp CRC32c: pure Go build (purego, or not amd64): hash/crc32 tested; the three-way CRC32 and AVX-512 fold loops NOT tested (not built)")
}
