// Whole files of ours that gvisor.sh copies into the carried netstack
// (internal/third_party/gvisor), one directory per patch of the series.
// They compile only there, where go vet and the tests (race detector
// included) see them. This go.mod makes the directory a module of its own
// so that the go tool leaves it alone here (./..., ustack's module zip).
module github.com/ustack-dev/ustack/internal/third_party/gvisor-overlay
