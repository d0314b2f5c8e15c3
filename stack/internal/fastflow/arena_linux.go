package fastflow

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// arena is the memory of a slab's send rings: one anonymous mapping of
// every chunk of rings the slab may hold, reserved at the first chunk and
// backed by memory only where rings are written. A chunk given back is
// released to the kernel at once (MADV_DONTNEED), so the process's
// resident memory falls as rings fall idle, where memory the Go heap
// frees goes back to the system only at the scavenger's pace. The
// mapping stays valid: a chunk made again reads zeros and costs page
// faults, not a system call. It is unmapped once the slab is garbage.
type arena struct {
	b     []byte
	chunk int // bytes in a chunk
}

// make returns chunk c of chunks bytes each, of n chunks in all, mapping
// the arena at the first call.
func (a *arena) make(s *Slab, c, chunk, n int) ([]byte, error) {
	if a.b == nil {
		b, err := unix.Mmap(-1, 0, chunk*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err != nil {
			return nil, err
		}
		a.b, a.chunk = b, chunk
		// Rings are reached only through the slab, and Ring's slices
		// live no longer than the call that took them, so nothing
		// reads the mapping once the slab is unreachable.
		runtime.AddCleanup(s, func(b []byte) { unix.Munmap(b) }, b)
	}
	off := c * a.chunk
	return a.b[off : off+a.chunk : off+a.chunk], nil
}

// free gives chunk c's memory back to the kernel.
func (a *arena) free(c int) {
	off := c * a.chunk
	// Private anonymous memory always takes MADV_DONTNEED; were it
	// refused, the chunk would only stay resident.
	_ = unix.Madvise(a.b[off:off+a.chunk], unix.MADV_DONTNEED)
}
