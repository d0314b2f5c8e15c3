package pcapio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/xsk"
)

// Config is what to capture and where (package stack's Capture, which
// documents the fields).
type Config struct {
	W        io.Writer
	SnapLen  int
	MaxBytes int64
}

// DefaultMaxBytes is Config.MaxBytes's default.
const DefaultMaxBytes = 64 << 20

// FileHeaderLen is the size of the file header, which CaptureStats.Bytes
// leaves out.
const FileHeaderLen = headerLen

const (
	headerLen = 24
	recordLen = 16
	// maxSnapLen is the snap length the file declares when none is set:
	// more than any frame ustack handles.
	maxSnapLen = 65535

	// A 24-byte file header, then per frame a 16-byte record header and
	// the frame's first SnapLen bytes, all little endian.
	magicNanos   = 0xa1b23c4d
	versionMajor = 2
	versionMinor = 4
	linkEthernet = 1 // LINKTYPE_ETHERNET
)

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	if c.W == nil {
		return errors.New("capture without a writer")
	}
	if c.SnapLen < 0 || c.SnapLen > maxSnapLen {
		return fmt.Errorf("capture snap length %d outside [0, %d]", c.SnapLen, maxSnapLen)
	}
	if c.MaxBytes < 0 || c.MaxBytes > 0 && c.MaxBytes < headerLen {
		return fmt.Errorf("capture bound %d bytes is less than the file header", c.MaxBytes)
	}
	return nil
}

// Writer is a capture shared by a stack's queues.
type Writer struct {
	snap int
	max  int64

	mu     sync.Mutex
	buf    *bufio.Writer
	hdr    [recordLen]byte // a record's header, under mu
	size   int64           // bytes written so far, under mu
	err    error           // the first write error, under mu; nothing is written after it
	layers int             // layers from Wrap not yet closed, under mu

	packets, bytes, dropped, errors atomic.Uint64
}

// NewWriter writes the file header to c.W (through a buffer flushed when
// the last layer closes).
func NewWriter(c Config) (*Writer, error) {
	w := &Writer{snap: c.SnapLen, max: c.MaxBytes, buf: bufio.NewWriterSize(c.W, 64<<10)}
	if w.snap == 0 {
		w.snap = maxSnapLen
	}
	if w.max == 0 {
		w.max = DefaultMaxBytes
	}
	var h [headerLen]byte
	binary.LittleEndian.PutUint32(h[0:], magicNanos)
	binary.LittleEndian.PutUint16(h[4:], versionMajor)
	binary.LittleEndian.PutUint16(h[6:], versionMinor)
	// h[8:16]: time zone offset and accuracy, zero.
	binary.LittleEndian.PutUint32(h[16:], uint32(w.snap))
	binary.LittleEndian.PutUint32(h[20:], linkEthernet)
	if _, err := w.buf.Write(h[:]); err != nil {
		return nil, fmt.Errorf("write capture header: %w", err)
	}
	w.size = headerLen
	return w, nil
}

// Record writes one frame. Safe for concurrent use.
func (w *Writer) Record(frame []byte, now time.Time) {
	data := frame[:min(len(frame), w.snap)]
	n := int64(recordLen + len(data))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		w.errors.Add(1)
		return
	}
	if w.size+n > w.max {
		w.dropped.Add(1)
		return
	}
	ns := now.UnixNano()
	binary.LittleEndian.PutUint32(w.hdr[0:], uint32(ns/1e9))
	binary.LittleEndian.PutUint32(w.hdr[4:], uint32(ns%1e9))
	binary.LittleEndian.PutUint32(w.hdr[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(w.hdr[12:], uint32(len(frame)))
	if _, err := w.buf.Write(w.hdr[:]); err != nil {
		w.err = err
		w.errors.Add(1)
		return
	}
	if _, err := w.buf.Write(data); err != nil {
		w.err = err
		w.errors.Add(1)
		return
	}
	w.size += n
	w.packets.Add(1)
	w.bytes.Add(uint64(n))
}

// Flush writes out what the buffer holds.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.buf.Flush(); err != nil {
		w.err = err
		return fmt.Errorf("flush capture: %w", err)
	}
	return nil
}

// Stats returns the capture's counters.
func (w *Writer) Stats() frameio.CaptureStats {
	return frameio.CaptureStats{Packets: w.packets.Load(), Bytes: w.bytes.Load(), Dropped: w.dropped.Load(), Errors: w.errors.Load()}
}

// Wrap returns a layer over inner that records what passes through it.
func (w *Writer) Wrap(inner frameio.IO) frameio.IO {
	w.mu.Lock()
	w.layers++
	w.mu.Unlock()
	return &layer{IO: inner, w: w}
}

// layer is one queue's capture: frames up and down are recorded, the
// rest passes through.
type layer struct {
	frameio.IO
	w *Writer
}

var _ frameio.IO = (*layer)(nil)

// Receive implements frameio.IO, recording the frames received.
func (l *layer) Receive(descs []xsk.Desc) int {
	n := l.IO.Receive(descs)
	if n > 0 {
		now := time.Now()
		for _, d := range descs[:n] {
			l.w.Record(l.IO.Data(d), now)
		}
	}
	return n
}

// Enqueue implements frameio.IO, recording the frames to be sent.
func (l *layer) Enqueue(descs []xsk.Desc) int {
	if len(descs) > 0 {
		now := time.Now()
		for _, d := range descs {
			l.w.Record(l.IO.Frame(d.Addr)[:d.Len], now)
		}
	}
	return l.IO.Enqueue(descs)
}

// ReadStats implements frameio.IO.
func (l *layer) ReadStats(st *frameio.Stats) {
	l.IO.ReadStats(st)
	st.Capture = l.w.Stats()
}

// Close implements frameio.IO: the last layer to close flushes the
// capture.
func (l *layer) Close() error {
	l.w.mu.Lock()
	l.w.layers--
	last := l.w.layers == 0
	l.w.mu.Unlock()
	var err error
	if last {
		err = l.w.Flush()
	}
	return errors.Join(err, l.IO.Close())
}
