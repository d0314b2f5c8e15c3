//go:build linux

package xsk

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

var _ [unsafe.Sizeof(unix.XDPDesc{}) - unsafe.Sizeof(Desc{})]struct{} // same size
var _ [unsafe.Sizeof(Desc{}) - unsafe.Sizeof(unix.XDPDesc{})]struct{}

func setsockoptStruct(fd, opt int, p unsafe.Pointer, size uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), size, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func getsockoptStruct(fd, opt int, p unsafe.Pointer, size uintptr) (uintptr, error) {
	l := uint32(size)
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if errno != 0 {
		return 0, errno
	}
	return uintptr(l), nil
}

func registerUMEM(fd int, mem []byte, cfg UMEMConfig) error {
	reg := unix.XDPUmemReg{
		Addr:     uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))),
		Len:      uint64(len(mem)),
		Size:     cfg.FrameSize,
		Headroom: cfg.Headroom,
	}
	return setsockoptStruct(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg))
}

func mmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	_, err := getsockoptStruct(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off))
	return off, err
}

func statistics(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	_, err := getsockoptStruct(fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	return st, err
}

func descSize() uint64 { return uint64(unsafe.Sizeof(Desc{})) }
