//go:build amd64 && !purego

package offload

import (
	"bytes"
	"testing"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// defaultHave512 is the package's own finding, before any test changes it.
var defaultHave512 = have512

// defaultPath names the checksum loop the package chose for this CPU,
// before any test changes it.
var defaultPath = pathName(haveWide, have512)

func pathName(wide, avx512 bool) string {
	switch {
	case avx512:
		return "avx512"
	case wide:
		return "avx2"
	}
	return "scalar"
}

// implementations lists the checksum loops this machine can run, each
// with a function that selects it, for tests and benchmarks; the
// returned function restores the default.
func implementations() []sumImpl {
	set := func(wide, avx512 bool) func() func() {
		return func() func() {
			w, a := haveWide, have512
			haveWide, have512 = wide, avx512
			return func() { haveWide, have512 = w, a }
		}
	}
	impls := []sumImpl{{"scalar", set(false, false)}}
	if cpu.X86.HasAVX2 {
		impls = append(impls, sumImpl{"avx2", set(true, false)})
	}
	if defaultHave512 {
		impls = append(impls, sumImpl{"avx512", set(true, true)})
	}
	return impls
}

// missingImplementations lists the checksum loops this machine cannot
// run, each with why: eachImpl reports them as skipped subtests.
func missingImplementations() []missingImpl {
	var m []missingImpl
	if !cpu.X86.HasAVX2 {
		m = append(m, missingImpl{"avx2", "this CPU has no AVX2"})
	}
	if !defaultHave512 {
		m = append(m, missingImpl{"avx512", "this CPU lacks AVX-512F, AVX-512BW or BMI2"})
	}
	return m
}

// TestCPUPaths says which checksum loops this CPU runs and which the
// package's tests therefore skip (.ci/run shows it in CI's log), and
// checks the choice: the loop in use is the widest the CPU's features
// allow (AVX-512 needs F, BW and BMI2), and every loop it can run agrees
// with the reference.
func TestCPUPaths(t *testing.T) {
	logPaths(t, "amd64 assembly built")
	want := "scalar"
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasBMI2:
		want = "avx512"
	case cpu.X86.HasAVX2:
		want = "avx2"
	}
	if defaultPath != want {
		t.Errorf("the package uses the %s loop; this CPU's features call for %s", defaultPath, want)
	}
	testPathsAgree(t, want)
}

// TestWideLoopsStayInBounds puts the data at the end of a page followed
// by an inaccessible one: the vector loops (the AVX-512 ones read and
// write their last block through byte masks) must neither fault nor
// write past the end.
func TestWideLoopsStayInBounds(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 4*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[page:2*page], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mprotect(mem[3*page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	srcPage, dstPage := mem[:page], mem[2*page:3*page]
	eachImpl(t, func(t *testing.T) {
		for n := 0; n <= 300; n++ {
			src, dst := srcPage[page-n:], dstPage[page-n:]
			for i := range src {
				src[i] = byte(i*7 + n)
			}
			if got, want := Checksum(src), reference(src); got != want {
				t.Fatalf("length %d: Checksum %#04x, reference %#04x", n, got, want)
			}
			if c, acc := CopySum(dst, src, 0); c != n || !bytes.Equal(dst, src) || ^Fold(acc) != reference(src) {
				t.Fatalf("length %d: CopySum copied %d, sum %#04x", n, c, ^Fold(acc))
			}
		}
	})
}
