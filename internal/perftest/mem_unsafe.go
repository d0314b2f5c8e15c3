package perftest

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// loadByte reads *b with an atomic load of the aligned word holding it,
// so that a spinning reader sees the queue pair's placement (perftest's
// latency tests poll memory the same way).
func loadByte(b *byte) byte {
	off := uintptr(unsafe.Pointer(b)) & 3
	word := (*uint32)(unsafe.Add(unsafe.Pointer(b), -int(off)))
	v := atomic.LoadUint32(word)
	var w [4]byte
	binary.NativeEndian.PutUint32(w[:], v)
	return w[off]
}

// loadUint64 atomically reads the 8-byte aligned word at b.
func loadUint64(b *byte) uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(b)))
}

func putUint64(b []byte, v uint64) { binary.NativeEndian.PutUint64(b, v) }
