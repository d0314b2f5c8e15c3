package stack

import "github.com/ustack-dev/ustack/stack/internal/frameio"

// frameIO is one queue's frame I/O, in the shape of an AF_XDP socket: an
// xsk.Socket on Linux (xskio_linux.go), a memory wire (package memwire)
// in tests and NewPipe, with any middleware (middleware.go) wrapped
// around it. See package frameio for who calls what.
type frameIO = frameio.IO
