package stack

import (
	"errors"
	"syscall"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("invalid stack configuration")

// ErrPermission reports that the process lacks the privileges ustack
// needs (root, or CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_IPC_LOCK).
var ErrPermission = errors.New("ustack needs root or CAP_NET_ADMIN+CAP_NET_RAW+CAP_BPF+CAP_IPC_LOCK")

// ErrNotSupported is returned by New on systems without AF_XDP.
var ErrNotSupported = errors.New("ustack needs Linux (AF_XDP and XDP)")

// ErrAddress reports an address a Dial or Listen cannot use: a host name
// (ustack does no name resolution), or a dial address without an IP or
// port.
var ErrAddress = errors.New("unusable address")

// ErrClosed is returned by operations on a closed Stack.
var ErrClosed = errors.New("stack closed")

// goError converts a netstack error into a Go error. It is the one place
// where that happens: errors that have an errno equivalent become that
// errno, so errors.Is(err, syscall.ECONNREFUSED) and friends work as with
// the kernel's sockets.
func goError(e tcpip.Error) error {
	if e == nil {
		return nil
	}
	switch e.(type) {
	case *tcpip.ErrPortInUse, *tcpip.ErrDuplicateAddress, *tcpip.ErrNoPortAvailable:
		return syscall.EADDRINUSE
	case *tcpip.ErrBadLocalAddress:
		return syscall.EADDRNOTAVAIL
	case *tcpip.ErrConnectionRefused:
		return syscall.ECONNREFUSED
	case *tcpip.ErrConnectionReset:
		return syscall.ECONNRESET
	case *tcpip.ErrConnectionAborted:
		return syscall.ECONNABORTED
	case *tcpip.ErrTimeout:
		return syscall.ETIMEDOUT
	case *tcpip.ErrNetworkUnreachable, *tcpip.ErrNoNet:
		return syscall.ENETUNREACH
	case *tcpip.ErrHostUnreachable, *tcpip.ErrHostDown:
		return syscall.EHOSTUNREACH
	case *tcpip.ErrInvalidEndpointState, *tcpip.ErrNotConnected:
		return syscall.ENOTCONN
	case *tcpip.ErrAlreadyConnected:
		return syscall.EISCONN
	case *tcpip.ErrNoBufferSpace:
		return syscall.ENOBUFS
	case *tcpip.ErrAddressFamilyNotSupported:
		return syscall.EAFNOSUPPORT
	case *tcpip.ErrBadAddress:
		return syscall.EFAULT
	case *tcpip.ErrMessageTooLong:
		return syscall.EMSGSIZE
	}
	return errors.New(e.String())
}
