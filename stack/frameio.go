package stack

import (
	"net"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/stack/internal/frameio"
)

// frameIO is one queue's frame I/O, in the shape of an AF_XDP socket: an
// xsk.Socket on Linux (xskio_linux.go), a memory wire (package memwire)
// in tests and NewPipe, with any middleware (middleware.go) wrapped
// around it. See package frameio for who calls what.
type frameIO = frameio.IO

// ethHeaderLen is the Ethernet header's length: frames carry no VLAN tag.
const ethHeaderLen = header.EthernetMinimumSize

// linkInfo is what ustack knows of the link it runs on.
type linkInfo struct {
	mtu uint32
	mac net.HardwareAddr
	// partialChecksums: the peer is local (veth) and may send TCP and UDP
	// with checksums left for offload (offload.Partial), which are then
	// accepted as the kernel accepts them.
	partialChecksums bool
	// multiBuffer: frames larger than one UMEM frame (mtu plus the
	// Ethernet header past cfg.FrameSize) come and go as chains, joined
	// by the sgio layer next to the socket.
	multiBuffer bool
}
