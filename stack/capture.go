package stack

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/xsk"
)

// Capture configures a packet capture of every frame ustack sends and
// receives, in pcap format (Ethernet, nanosecond timestamps), readable by
// tshark, tcpdump and Wireshark. Received frames are recorded as they
// come off the ring (after any Faults on RX), sent frames as they go on
// it (before any Faults on TX). A frame that finds the TX ring full is
// recorded again when netstack retries it.
type Capture struct {
	// W receives the capture; the stack writes it through a buffer it
	// flushes on Close, and does not close W.
	W io.Writer
	// SnapLen is how many bytes of each frame are recorded (default: the
	// whole frame).
	SnapLen int
	// MaxBytes bounds the capture's size in bytes, header included
	// (default 64 MiB); frames past the bound are counted in
	// CaptureStats.Dropped and not recorded.
	MaxBytes int64
}

// DefaultCaptureMaxBytes is Capture.MaxBytes's default.
const DefaultCaptureMaxBytes = 64 << 20

// CaptureStats count a capture's records.
type CaptureStats struct {
	// Packets and Bytes are the records written and their size in the
	// file (record headers included).
	Packets, Bytes uint64
	// Dropped counts frames not recorded because of MaxBytes; Errors,
	// frames not recorded because W returned an error (after the first
	// error the capture stops).
	Dropped, Errors uint64
}

const (
	pcapHeaderLen = 24
	pcapRecordLen = 16
	// pcapSnapLen is the snap length the file declares when none is set:
	// more than any frame ustack handles.
	pcapSnapLen = 65535
)

// capturer is the capture shared by a stack's queues.
type capturer struct {
	snap int
	max  int64

	mu   sync.Mutex
	buf  *bufio.Writer
	hdr  [pcapRecordLen]byte // a record's header, under mu
	size int64               // bytes written so far
	err  error               // the first write error; nothing is written after it

	packets, bytes, dropped, errors atomic.Uint64
}

func (c *Capture) validate() error {
	if c.W == nil {
		return fmt.Errorf("%w: capture without a writer", ErrConfig)
	}
	if c.SnapLen < 0 || c.SnapLen > pcapSnapLen {
		return fmt.Errorf("%w: capture snap length %d outside [0, %d]", ErrConfig, c.SnapLen, pcapSnapLen)
	}
	if c.MaxBytes < 0 || c.MaxBytes > 0 && c.MaxBytes < pcapHeaderLen {
		return fmt.Errorf("%w: capture bound %d bytes is less than the file header", ErrConfig, c.MaxBytes)
	}
	return nil
}

// The pcap format (the "libpcap" file format, as tcpdump writes it, with
// nanosecond timestamps): a 24-byte file header, then per frame a 16-byte
// record header and the frame's first SnapLen bytes, all little endian.
// Written here rather than with gopacket's pcapgo, which would add 2.2 MB
// (its layers package, and its init) to every program that links ustack;
// the tests read the files with pcapgo and tshark.
const (
	pcapMagicNanos   = 0xa1b23c4d
	pcapVersionMajor = 2
	pcapVersionMinor = 4
	pcapLinkEthernet = 1 // LINKTYPE_ETHERNET
)

// newCapturer writes the file header; the error is the capturer's err.
func newCapturer(c *Capture) *capturer {
	cp := &capturer{snap: c.SnapLen, max: c.MaxBytes, buf: bufio.NewWriterSize(c.W, 64<<10)}
	if cp.snap == 0 {
		cp.snap = pcapSnapLen
	}
	if cp.max == 0 {
		cp.max = DefaultCaptureMaxBytes
	}
	var h [pcapHeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagicNanos)
	binary.LittleEndian.PutUint16(h[4:], pcapVersionMajor)
	binary.LittleEndian.PutUint16(h[6:], pcapVersionMinor)
	// h[8:16]: time zone offset and accuracy, zero.
	binary.LittleEndian.PutUint32(h[16:], uint32(cp.snap))
	binary.LittleEndian.PutUint32(h[20:], pcapLinkEthernet)
	if _, err := cp.buf.Write(h[:]); err != nil {
		cp.err = fmt.Errorf("write capture header: %w", err)
	}
	cp.size = pcapHeaderLen
	return cp
}

// record writes one frame. Called from the workers and the TX path.
func (c *capturer) record(frame []byte, now time.Time) {
	data := frame[:min(len(frame), c.snap)]
	n := int64(pcapRecordLen + len(data))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		c.errors.Add(1)
		return
	}
	if c.size+n > c.max {
		c.dropped.Add(1)
		return
	}
	ns := now.UnixNano()
	binary.LittleEndian.PutUint32(c.hdr[0:], uint32(ns/1e9))
	binary.LittleEndian.PutUint32(c.hdr[4:], uint32(ns%1e9))
	binary.LittleEndian.PutUint32(c.hdr[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(c.hdr[12:], uint32(len(frame)))
	if _, err := c.buf.Write(c.hdr[:]); err != nil {
		c.err = err
		c.errors.Add(1)
		return
	}
	if _, err := c.buf.Write(data); err != nil {
		c.err = err
		c.errors.Add(1)
		return
	}
	c.size += n
	c.packets.Add(1)
	c.bytes.Add(uint64(n))
}

// flush writes out what the buffer holds.
func (c *capturer) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if err := c.buf.Flush(); err != nil {
		c.err = err
		return fmt.Errorf("flush capture: %w", err)
	}
	return nil
}

func (c *capturer) stats() CaptureStats {
	return CaptureStats{Packets: c.packets.Load(), Bytes: c.bytes.Load(), Dropped: c.dropped.Load(), Errors: c.errors.Load()}
}

// captureIO is frame I/O that records what passes through it to a
// capturer: a middleware in the manner of gVisor's link/sniffer.
type captureIO struct {
	frameIO
	c *capturer
}

var _ frameIO = (*captureIO)(nil)

// Receive implements frameIO, recording the frames received.
func (p *captureIO) Receive(descs []xsk.Desc) int {
	n := p.frameIO.Receive(descs)
	if n > 0 {
		now := time.Now()
		for _, d := range descs[:n] {
			p.c.record(p.frameIO.Data(d), now)
		}
	}
	return n
}

// Enqueue implements frameIO, recording the frames to be sent.
func (p *captureIO) Enqueue(descs []xsk.Desc) int {
	if len(descs) > 0 {
		now := time.Now()
		for _, d := range descs {
			p.c.record(p.frameIO.Frame(d.Addr)[:d.Len], now)
		}
	}
	return p.frameIO.Enqueue(descs)
}
