//go:build !amd64 || purego

package offload

// Without AVX2 (other architectures, or built with -tags purego) the
// scalar loops do all the work.
const wideMin = 1 << 62

const haveWide = false

func sumWide([]byte) (uint64, int) { return 0, 0 }

func copySumWide(dst, src []byte) (uint64, int) { return 0, 0 }
