//go:build linux

package qp

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const haveWritev = true

// iovec is writev(2)'s vector.
type iovec = unix.Iovec

// writev writes iov, less its first skip bytes, to fd with one
// writev(2), through the vector array buf (reused: no allocation). Only
// the first maxIovec vectors go in one call.
func writev(fd uintptr, iov [][]byte, skip int, buf []iovec) (int, syscall.Errno) {
	for _, v := range iov {
		if skip >= len(v) {
			skip -= len(v)
			continue
		}
		v = v[skip:]
		skip = 0
		if len(buf) == cap(buf) {
			break
		}
		buf = append(buf, iovec{Base: &v[0]})
		buf[len(buf)-1].SetLen(len(v))
	}
	if len(buf) == 0 {
		return 0, 0
	}
	n, _, e := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	return int(n), e
}
