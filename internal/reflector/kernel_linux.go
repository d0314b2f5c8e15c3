package reflector

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's end of the floor's bulk workloads: a UDP socket that sends
// to a Floor's sink as fast as the kernel takes datagrams, and one that
// asks a Floor's source for a stream and counts it.

// Dialer dials a kernel socket (net.Dialer.DialContext, or one run in a
// namespace).
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// Count is what a receiver counted: datagrams, UDP payload bytes, and the
// seconds from the first to the last.
type Count struct {
	Frames  int64   `json:"frames"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

// Blast sends size-byte datagrams to addr from one kernel socket as
// fast as it takes them, for d, and returns how many it sent. Pointed at a Floor's
// sink, it is the floor's bulk: what arrives is counted there. With UDP segmentation
// offload (UDP_SEGMENT) each write is GSOSegments datagrams that the
// kernel cuts in software, which halves the sender's cost per datagram;
// without it (an older kernel), one datagram a write.
func Blast(ctx context.Context, dial Dialer, addr string, size int, d time.Duration) (int64, error) {
	c, err := dial(ctx, "udp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	per := 1
	if uc, ok := c.(*net.UDPConn); ok {
		if rc, err := uc.SyscallConn(); err == nil {
			var serr error
			rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, size) })
			if serr == nil {
				per = GSOSegments
			}
		}
	}
	msg := make([]byte, size*per)
	var n int64
	for t0, i := time.Now(), 0; ; i++ {
		if i%16 == 0 && (time.Since(t0) >= d || ctx.Err() != nil) {
			return n, ctx.Err()
		}
		if _, err := c.Write(msg); err != nil && !errors.Is(err, unix.ENOBUFS) {
			return n, fmt.Errorf("udp blast: %w", err)
		}
		n += int64(per)
	}
}

// GSOSegments is how many datagrams blastUDP writes at once with UDP
// segmentation offload: 44 × 1472 bytes, the most under 64 KiB.
const GSOSegments = 44

// CountStream asks the floor's source at addr for a stream of d and
// counts the datagrams that reach a kernel UDP socket, from the first to
// the last: the floor's bulk-s2c.
func CountStream(ctx context.Context, dial Dialer, addr string, d time.Duration) (Count, error) {
	c, err := dial(ctx, "udp", addr)
	if err != nil {
		return Count{}, err
	}
	defer c.Close()
	if uc, ok := c.(*net.UDPConn); ok {
		uc.SetReadBuffer(8 << 20)
	}
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], uint64(d))
	buf := make([]byte, 1<<16)
	var r Count
	var first, last time.Time
	// The request is a datagram: one that arrives while the floor's RX
	// ring is still full of a previous blast is dropped, so it goes again
	// every 200 ms until the stream starts (a duplicate that arrives
	// during the stream is dropped by the floor), for up to 2 s.
	for try := 0; first.IsZero(); try++ {
		if try == 10 {
			return r, errors.New("stream: no datagrams from the floor's source in 2s")
		}
		if _, err := c.Write(req[:]); err != nil {
			return r, fmt.Errorf("stream request: %w", err)
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(buf); err == nil {
			first = time.Now() // the interval starts with it
		} else if !errors.Is(err, os.ErrDeadlineExceeded) {
			return r, fmt.Errorf("stream: %w", err)
		}
	}
	// After the first datagram, 100 ms without one ends the stream.
	c.SetReadDeadline(first.Add(100 * time.Millisecond))
	for i := 0; ; i++ {
		n, err := c.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			return r, fmt.Errorf("stream: %w", err)
		}
		now := time.Now()
		last = now
		r.Frames++
		r.Bytes += int64(n)
		if i%256 == 0 {
			c.SetReadDeadline(now.Add(100 * time.Millisecond))
		}
		if now.Sub(first) > d+maxStreamSlack {
			break
		}
	}
	if r.Frames == 0 {
		return r, errors.New("stream: no datagrams from the floor's source")
	}
	r.Seconds = last.Sub(first).Seconds()
	return r, nil
}

// maxStreamSlack bounds how long past the requested time a stream is
// read.
const maxStreamSlack = time.Second
