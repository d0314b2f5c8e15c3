package xsk

import "errors"

var (
	// ErrConfig reports invalid options: sizes, counts, queue numbers.
	ErrConfig = errors.New("invalid xsk configuration")
	// ErrNoInterface reports an interface name or index that does not
	// exist in the calling thread's network namespace.
	ErrNoInterface = errors.New("no such interface")
	// ErrZeroCopy reports that zero-copy was required but the driver
	// cannot provide it (veth cannot).
	ErrZeroCopy = errors.New("zero-copy AF_XDP not supported on this interface")
	// ErrPermission reports missing privileges (CAP_NET_RAW, CAP_NET_ADMIN,
	// or memlock for the UMEM).
	ErrPermission = errors.New("insufficient privileges for AF_XDP")
	// ErrMultiBuffer reports that Config.MultiBuffer was asked for but
	// the kernel or driver refused XDP_USE_SG (it needs Linux 6.6, and in
	// zero-copy mode a driver with multi-buffer support).
	ErrMultiBuffer = errors.New("multi-buffer AF_XDP (XDP_USE_SG) not supported here")
	// ErrClosed reports use of a closed socket or UMEM.
	ErrClosed = errors.New("xsk closed")
)
