package xsk

import (
	"errors"
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

// UMEM is a packet buffer area shared with the kernel by one or more
// sockets. It is registered with the kernel by the first socket opened on
// it; later sockets share that registration.
type UMEM struct {
	mem       []byte
	cfg       UMEMConfig
	regFD     int    // socket the UMEM is registered on; -1 before the first
	nextFrame uint32 // frames below this are assigned to sockets
	sockets   int    // open sockets
	closed    bool
}

// NewUMEM maps a UMEM. Zero fields of cfg take their defaults.
func NewUMEM(cfg UMEMConfig) (*UMEM, error) {
	def := DefaultUMEMConfig()
	if cfg.FrameCount == 0 {
		cfg.FrameCount = def.FrameCount
	}
	if cfg.FrameSize == 0 {
		cfg.FrameSize = def.FrameSize
	}
	page := uint32(unix.Getpagesize())
	if cfg.FrameSize < 2048 || cfg.FrameSize > page || cfg.FrameSize&(cfg.FrameSize-1) != 0 {
		return nil, fmt.Errorf("%w: frame size %d must be a power of two in [2048, %d]", ErrConfig, cfg.FrameSize, page)
	}
	if cfg.Headroom > cfg.FrameSize-unix.XDP_PACKET_HEADROOM-1500 {
		return nil, fmt.Errorf("%w: headroom %d leaves no room for a 1500-byte packet in a %d-byte frame", ErrConfig, cfg.Headroom, cfg.FrameSize)
	}
	size, err := umemSize(cfg)
	if err != nil {
		return nil, err
	}
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	if cfg.HugePages {
		flags |= unix.MAP_HUGETLB
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		if cfg.HugePages {
			return nil, fmt.Errorf("map umem with huge pages (are vm.nr_hugepages reserved?): %w", err)
		}
		return nil, fmt.Errorf("map umem: %w", err)
	}
	return &UMEM{mem: mem, cfg: cfg, regFD: -1}, nil
}

// maxUMEMSize bounds a UMEM's mapping.
const maxUMEMSize = 1 << 36

// umemSize returns the length of cfg's mapping. The product is taken in
// 64 bits: in uint32 a configuration that passes the bound (1<<20 frames
// of 4 KiB) wraps and maps less than the frames Open hands out.
func umemSize(cfg UMEMConfig) (int, error) {
	size := uint64(cfg.FrameCount) * uint64(cfg.FrameSize)
	if size > maxUMEMSize || size > math.MaxInt {
		return 0, fmt.Errorf("%w: %d frames of %d bytes is over 64 GiB or the address space", ErrConfig, cfg.FrameCount, cfg.FrameSize)
	}
	return int(size), nil
}

// Config returns the UMEM's configuration with defaults filled in.
func (u *UMEM) Config() UMEMConfig { return u.cfg }

// FreeFrames returns how many frames are not yet assigned to a socket.
func (u *UMEM) FreeFrames() uint32 { return u.cfg.FrameCount - u.nextFrame }

// Data returns the packet bytes a descriptor points to. The slice aliases
// the UMEM: it is valid only while the caller owns the frame.
func (u *UMEM) Data(d Desc) []byte {
	return u.mem[d.Addr : d.Addr+uint64(d.Len) : d.Addr+uint64(d.Len)]
}

// Frame returns the whole frame that contains addr, for writing a packet
// to transmit. The slice aliases the UMEM.
func (u *UMEM) Frame(addr uint64) []byte {
	base := addr &^ uint64(u.cfg.FrameSize-1)
	return u.mem[base : base+uint64(u.cfg.FrameSize) : base+uint64(u.cfg.FrameSize)]
}

// Span returns n bytes of the UMEM from the start of the frame that
// holds addr, running on into the frames after it: room to write a
// multi-buffer packet across adjacent frames the caller owns. It returns
// nil if the span would pass the UMEM's end.
func (u *UMEM) Span(addr uint64, n int) []byte {
	base := addr &^ uint64(u.cfg.FrameSize-1)
	if n < 0 || base+uint64(n) > uint64(len(u.mem)) {
		return nil
	}
	return u.mem[base : base+uint64(n) : base+uint64(n)]
}

// Close unmaps the UMEM. All sockets on it must be closed first.
func (u *UMEM) Close() error {
	if u.closed {
		return nil
	}
	if u.sockets > 0 {
		return fmt.Errorf("close umem: %d sockets still open on it", u.sockets)
	}
	u.closed = true
	return errors.Join(unix.Munmap(u.mem))
}
