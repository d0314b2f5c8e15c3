package stack

import (
	"fmt"
	"io"

	"github.com/ustack-dev/ustack/stack/internal/pcapio"
)

// Capture configures a packet capture of every frame ustack sends and
// receives, in pcap format (Ethernet, nanosecond timestamps), readable by
// tshark, tcpdump and Wireshark. Received frames are recorded as they
// come off the ring (after any Faults on RX), sent frames as they go on
// it (before any Faults on TX). A frame that finds the TX ring full is
// recorded again when netstack retries it (QueueStats.TxRingFull counts
// those). The writer is package pcapio's (stack/internal/pcapio).
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

func (c *Capture) validate() error {
	if err := (*pcapio.Config)(c).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
