package fastflow

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSlabReleasesRings checks that a chunk of rings given back leaves
// the process's resident memory at once, and that a ring made again in
// its place works.
func TestSlabReleasesRings(t *testing.T) {
	s, rings := slabWithRings(t, 16<<10, 3*ringChunk)
	for _, r := range rings {
		b := s.Ring(r)
		for i := range b {
			b[i] = 0xa5
		}
	}
	if got, want := resident(t, s.arena.b[:3*s.arena.chunk]), 3*s.arena.chunk; got != want {
		t.Fatalf("%d bytes of written rings resident, want %d", got, want)
	}
	for _, r := range rings {
		s.FreeRing(r)
	}
	if got, want := resident(t, s.arena.b[:3*s.arena.chunk]), s.arena.chunk; got != want {
		t.Fatalf("all rings free: %d bytes resident, want %d (one chunk kept)", got, want)
	}
	for range 2 * ringChunk {
		r, err := s.AllocRing()
		if err != nil {
			t.Fatal(err)
		}
		b := s.Ring(r)
		b[0], b[len(b)-1] = 1, 2
		if b[0] != 1 || b[len(b)-1] != 2 {
			t.Fatalf("ring %d does not hold what was written", r)
		}
	}
}

// resident returns how many bytes of b are in memory.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	page := unix.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal("mincore:", e)
	}
	n := 0
	for _, v := range vec {
		if v&1 != 0 {
			n += page
		}
	}
	return n
}
