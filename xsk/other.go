//go:build !linux

package xsk

import "errors"

// ErrNotSupported is returned on systems without AF_XDP.
var ErrNotSupported = errors.New("AF_XDP is only supported on Linux")

// UMEM is a packet buffer area; on this system none can be made.
type UMEM struct{}

// Socket is an AF_XDP socket; on this system none can be opened.
type Socket struct{}

// NewUMEM reports ErrNotSupported.
func NewUMEM(UMEMConfig) (*UMEM, error) { return nil, ErrNotSupported }

// Close does nothing.
func (u *UMEM) Close() error { return nil }

// Open reports ErrNotSupported.
func Open(*UMEM, Config) (*Socket, error) { return nil, ErrNotSupported }

// OpenSockets returns 0.
func OpenSockets() int64 { return 0 }

// LookupInterface reports ErrNotSupported.
func LookupInterface(string) (Interface, error) { return Interface{}, ErrNotSupported }
