//go:build !linux

package stack

// New reports ErrNotSupported: ustack runs over AF_XDP, which only Linux has.
func New(cfg Config) (*Stack, error) { return nil, ErrNotSupported }
