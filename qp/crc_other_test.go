//go:build !amd64 || purego

package qp

import "testing"

func crcPaths() []crcPath { return []crcPath{{"hash-crc32", func() func() { return func() {} }}} }

// TestCPUPaths says which CRC32c loops the build runs (.ci/run shows it
// in CI's log): without assembly, hash/crc32's alone, which it checks.
func TestCPUPaths(t *testing.T) {
	t.Logf("qp CRC32c: pure Go build (purego, or not amd64): hash/crc32 tested; the three-way CRC32 and AVX-512 fold loops NOT tested (not built)")
	if haveCRC3 || haveFold {
		t.Error("a pure Go build uses an assembly loop")
	}
	testCRCPathsAgree(t)
}
