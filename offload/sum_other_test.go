//go:build !amd64 || purego

package offload

import "testing"

func implementations() []sumImpl { return []sumImpl{{"scalar", func() func() { return func() {} }}} }

func missingImplementations() []missingImpl {
	return []missingImpl{{"avx2", "built without assembly (purego, or not amd64)"}, {"avx512", "built without assembly (purego, or not amd64)"}}
}

// TestCPUPaths says which checksum loops the build runs and which the
// package's tests therefore skip (.ci/run shows it in CI's log), and
// checks that the scalar loop, the only one built, is in use and agrees
// with the reference.
func TestCPUPaths(t *testing.T) {
	logPaths(t, "pure Go build (purego, or not amd64)")
	if haveWide {
		t.Error("a pure Go build uses a vector loop")
	}
	testPathsAgree(t, "scalar")
}
