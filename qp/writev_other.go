//go:build !linux

package qp

import "syscall"

// Without writev(2) here every payload is copied into txbuf.
const haveWritev = false

type iovec struct{}

func writev(fd uintptr, iov [][]byte, skip int, buf []iovec) (int, syscall.Errno) {
	return 0, syscall.ENOSYS
}
