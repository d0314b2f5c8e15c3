//go:build !linux

package fastflow

// arena is the memory of a slab's send rings where the platform has no
// anonymous mappings to release: a Go allocation a chunk, which the
// runtime returns to the system once the garbage collector frees it.
type arena struct{}

func (a *arena) make(_ *Slab, _, chunk, _ int) ([]byte, error) { return make([]byte, chunk), nil }

func (a *arena) free(int) {}
