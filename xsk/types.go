package xsk

import (
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Interface is what ustack needs to know of a network interface, as
// LookupInterface finds it.
type Interface struct {
	Name  string
	Index int
	MTU   int
	MAC   net.HardwareAddr
	// RxQueues is the number of RX queues, 0 when the kernel does not
	// report it.
	RxQueues int
	// Kind is the link's kind as netlink names it ("veth", "device", …).
	Kind string
	// Addrs are the kernel's own IP addresses on the interface.
	Addrs []netip.Prefix
}

// Desc is an AF_XDP RX/TX descriptor (struct xdp_desc): a packet of Len
// bytes at UMEM offset Addr, or, on a socket with Config.MultiBuffer, a
// part of one: OptContd in Options says the packet goes on in the next
// descriptor.
type Desc struct {
	Addr    uint64
	Len     uint32
	Options uint32
}

// OptContd is the Desc.Options bit (XDP_PKT_CONTD) of a multi-buffer
// packet's every descriptor but its last.
const OptContd = 1

// UMEMConfig sizes a UMEM.
type UMEMConfig struct {
	// FrameCount is the number of frames (default 4096).
	FrameCount uint32
	// FrameSize is the size of a frame in bytes: a power of two from 2048
	// to the page size (default 4096, which holds a 3506-byte veth MTU
	// with room to spare).
	FrameSize uint32
	// Headroom is reserved in front of each received packet, for
	// prepending headers in place (default 0).
	Headroom uint32
	// HugePages backs the UMEM with huge pages (MAP_HUGETLB); they must
	// have been reserved (vm.nr_hugepages).
	HugePages bool
}

// DefaultUMEMConfig returns 4096 frames of 4096 bytes (16 MiB): exactly
// two sockets with the default 1024 receive and 1024 transmit frames each,
// with no frames to spare.
func DefaultUMEMConfig() UMEMConfig {
	return UMEMConfig{FrameCount: 4096, FrameSize: 4096}
}

// BindMode chooses between copy and zero-copy operation.
type BindMode int

const (
	// BindAuto lets the kernel use zero-copy where the driver supports it
	// and copy mode otherwise; Socket.ZeroCopy reports which it got.
	BindAuto BindMode = iota
	// BindCopy forces copy mode.
	BindCopy
	// BindZeroCopy requires zero-copy and fails with ErrZeroCopy without.
	BindZeroCopy
)

func (m BindMode) String() string {
	switch m {
	case BindAuto:
		return "auto"
	case BindCopy:
		return "copy"
	case BindZeroCopy:
		return "zero-copy"
	}
	return fmt.Sprintf("BindMode(%d)", int(m))
}

// Config configures one socket.
type Config struct {
	// Interface is the name of the interface to bind, in the calling
	// thread's network namespace.
	Interface string
	// Queue is the interface RX/TX queue to bind.
	Queue int
	// RxSize, TxSize, FillSize and CompletionSize are ring sizes in
	// descriptors: powers of two (default 1024 each).
	RxSize, TxSize, FillSize, CompletionSize uint32
	// RxFrames is how many UMEM frames the socket takes for receiving
	// (default FillSize), TxFrames how many for transmitting (default
	// TxSize). The two pools are separate so that one goroutine can
	// receive while another transmits; see the package doc.
	RxFrames, TxFrames uint32
	// Mode selects copy or zero-copy (default BindAuto).
	Mode BindMode
	// MultiBuffer binds with XDP_USE_SG (Linux 6.6 or later; in zero-copy
	// mode, a driver that supports it): a packet larger than a frame is
	// received, and may be sent, as a chain of descriptors (OptContd).
	// Without it the kernel drops such packets. Sockets that share the
	// UMEM take the first socket's setting. Open fails with
	// ErrMultiBuffer where the kernel refuses it.
	MultiBuffer bool
	// NoNeedWakeup turns off XDP_USE_NEED_WAKEUP, making the kernel poll
	// the rings continually instead of waiting for kicks. Off by default:
	// need_wakeup saves syscalls and CPU.
	NoNeedWakeup bool
	// BusyWait is how long Open keeps retrying a bind that fails with
	// EBUSY (default DefaultBusyWait; negative: do not retry). The kernel
	// frees a closed socket's buffer pool, and with it the queue, on a
	// work queue some time after close returns, so a queue whose previous
	// owner just closed (or exited) reads as busy for a moment. A queue
	// that stays busy for BusyWait is held by a live socket.
	BusyWait time.Duration
}

// DefaultBusyWait is the default Config.BusyWait.
const DefaultBusyWait = time.Second

// DefaultRingSize is the default size of each of a socket's rings.
const DefaultRingSize = 1024

func (c *Config) setDefaults() {
	for _, p := range []*uint32{&c.RxSize, &c.TxSize, &c.FillSize, &c.CompletionSize} {
		if *p == 0 {
			*p = DefaultRingSize
		}
	}
	if c.RxFrames == 0 {
		c.RxFrames = c.FillSize
	}
	if c.TxFrames == 0 {
		c.TxFrames = c.TxSize
	}
	if c.BusyWait == 0 {
		c.BusyWait = DefaultBusyWait
	}
}

func (c *Config) validate() error {
	for _, r := range []struct {
		name string
		v    uint32
	}{{"rx", c.RxSize}, {"tx", c.TxSize}, {"fill", c.FillSize}, {"completion", c.CompletionSize}} {
		if r.v&(r.v-1) != 0 || r.v > 1<<20 {
			return fmt.Errorf("%w: %s ring size %d is not a power of two up to 2^20", ErrConfig, r.name, r.v)
		}
	}
	if c.Queue < 0 {
		return fmt.Errorf("%w: queue %d is negative", ErrConfig, c.Queue)
	}
	if c.Mode < BindAuto || c.Mode > BindZeroCopy {
		return fmt.Errorf("%w: unknown mode %v", ErrConfig, c.Mode)
	}
	return nil
}

// Stats are a socket's counters: the kernel's (XDP_STATISTICS) and
// ustack's own.
type Stats struct {
	// Kernel counters.
	RxDropped, RxInvalid, TxInvalid, RxRingFull, FillRingEmpty, TxRingEmpty uint64
	// Own counters.
	RxPackets, RxBytes, TxPackets, TxBytes      uint64
	Kicks, KickRetries, FillStarved, TxRingFull uint64
}
