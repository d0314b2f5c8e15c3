// Package echo holds the servers and the client workloads that
// cmd/ustack-echo and the benchmark share, so every contender is measured
// by the same code: a ping-pong for round-trip times and pipelined
// requests over many connections for a rate (against an echo server), and
// a one-way bulk transfer for throughput (against a discard server).
package echo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/hist"
)

// Dialer opens a connection, over the kernel or ustack.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// ServeTCP echoes every connection ln accepts until ln is closed; it
// returns nil then.
func ServeTCP(ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	defer func() {
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		mu.Lock()
		open[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			c.Close()
			mu.Lock()
			delete(open, c)
			mu.Unlock()
		}()
	}
}

// ServeUDP echoes every datagram pc receives until pc is closed.
func ServeUDP(pc net.PacketConn) error {
	buf := make([]byte, 65536)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("read: %w", err)
		}
		if _, err := pc.WriteTo(buf[:n], from); err != nil && errors.Is(err, net.ErrClosed) {
			return nil
		}
	}
}

// NewHistogram returns a histogram of round-trip times in nanoseconds,
// up to 10 s, each within 1/1024 of its value.
func NewHistogram() *hist.Histogram {
	return hist.New(int64(10 * time.Second))
}

// PingPongConfig bounds a ping-pong run.
type PingPongConfig struct {
	Size     int           // message bytes (default 64)
	Warmup   int           // round trips not recorded (default 1000)
	Count    int           // recorded round trips, 0 for no limit
	Duration time.Duration // recording time limit, 0 for no limit; one of Count and Duration must be set
}

// WithDefaults returns cfg with PingPong's defaults filled in, or an
// error if it sets no bound.
func (cfg PingPongConfig) WithDefaults() (PingPongConfig, error) {
	if cfg.Size <= 0 {
		cfg.Size = 64
	}
	if cfg.Warmup < 0 {
		cfg.Warmup = 0
	} else if cfg.Warmup == 0 {
		cfg.Warmup = 1000
	}
	if cfg.Count <= 0 && cfg.Duration <= 0 {
		return cfg, errors.New("ping-pong needs a count or a duration")
	}
	return cfg, nil
}

// ErrMismatch reports an echo that differs from what was sent.
var ErrMismatch = errors.New("echo differs from the message sent")

// PingPong sends Size bytes on c, waits for them to come back, checks
// that they are the bytes sent, and records each round trip's time. Each
// message carries its round number (in its first eight bytes, when it has
// them), so a stale or misdirected echo does not pass. It stops at Count
// round trips or after Duration, whichever is first, or when ctx is done.
func PingPong(ctx context.Context, c net.Conn, cfg PingPongConfig) (*hist.Histogram, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	msg := make([]byte, cfg.Size)
	for i := range msg {
		msg[i] = byte(i)
	}
	buf := make([]byte, cfg.Size)
	h := NewHistogram()
	var deadline time.Time
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return h, err
		}
		rec := i >= cfg.Warmup
		if rec && deadline.IsZero() && cfg.Duration > 0 {
			deadline = time.Now().Add(cfg.Duration)
		}
		if rec && (cfg.Count > 0 && int(h.TotalCount()) >= cfg.Count || !deadline.IsZero() && time.Now().After(deadline)) {
			return h, nil
		}
		if len(msg) >= 8 {
			binary.BigEndian.PutUint64(msg, uint64(i))
		}
		t0 := time.Now()
		if _, err := c.Write(msg); err != nil {
			return h, fmt.Errorf("write: %w", err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return h, fmt.Errorf("read: %w", err)
		}
		if rec {
			h.RecordValue(time.Since(t0).Nanoseconds())
		}
		if !bytes.Equal(buf, msg) {
			return h, fmt.Errorf("round trip %d: %w", i, ErrMismatch)
		}
	}
}

// RateConfig shapes a request-rate run.
type RateConfig struct {
	Network, Address string
	Conns            int           // connections (default 32)
	Size             int           // request bytes (default 64)
	Pipeline         int           // requests in flight per connection (default 1)
	Duration         time.Duration // measured time (default 3s)
	Warmup           time.Duration // unmeasured time first (default 500ms)
}

// WithDefaults returns cfg with Rate's defaults filled in.
func (cfg RateConfig) WithDefaults() RateConfig {
	if cfg.Conns <= 0 {
		cfg.Conns = 32
	}
	if cfg.Size <= 0 {
		cfg.Size = 64
	}
	if cfg.Pipeline <= 0 {
		cfg.Pipeline = 1
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	if cfg.Warmup < 0 {
		cfg.Warmup = 0
	} else if cfg.Warmup == 0 {
		cfg.Warmup = 500 * time.Millisecond
	}
	return cfg
}

// Rate opens Conns connections and on each keeps Pipeline requests of Size
// bytes in flight against an echo server, counting completed requests
// during Duration. It returns the count and the measured time.
func Rate(ctx context.Context, dial Dialer, cfg RateConfig) (int64, time.Duration, error) {
	cfg = cfg.WithDefaults()
	conns := make([]net.Conn, 0, cfg.Conns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < cfg.Conns; i++ {
		c, err := dial(ctx, cfg.Network, cfg.Address)
		if err != nil {
			return 0, 0, fmt.Errorf("connection %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	var counting atomic.Bool
	var done atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, len(conns))
	for _, c := range conns {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			req := make([]byte, cfg.Size*cfg.Pipeline)
			resp := make([]byte, cfg.Size*cfg.Pipeline)
			c.SetDeadline(time.Now().Add(cfg.Warmup + cfg.Duration + 10*time.Second))
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Pipeline requests go out in one write and come back
				// as one read of the same size.
				if _, err := c.Write(req); err != nil {
					errc <- err
					return
				}
				if _, err := io.ReadFull(c, resp); err != nil {
					errc <- err
					return
				}
				if counting.Load() {
					done.Add(int64(cfg.Pipeline))
				}
			}
		}(c)
	}
	wait := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			return err
		}
	}
	err := wait(cfg.Warmup)
	start := time.Now()
	if err == nil {
		counting.Store(true)
		err = wait(cfg.Duration)
	}
	elapsed := time.Since(start)
	n := done.Load()
	close(stop)
	for _, c := range conns {
		c.SetDeadline(time.Now()) // unblock readers
	}
	wg.Wait()
	return n, elapsed, err
}

// serveEach runs handle on its own goroutine for every connection ln
// accepts, closing the connection after, until ln is closed (then it
// waits for the handlers and returns nil) or Accept fails otherwise.
func serveEach(ln net.Listener, handle func(net.Conn)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			handle(c)
		}()
	}
}

// ServeDiscard reads every connection ln accepts to its end, then writes
// back the number of bytes it read (8 bytes, big-endian) and closes it:
// the server side of Bulk. It returns nil when ln is closed.
func ServeDiscard(ln net.Listener) error {
	return serveEach(ln, func(c net.Conn) {
		buf := make([]byte, 256<<10)
		var n int64
		for {
			m, err := c.Read(buf)
			n += int64(m)
			if err != nil {
				if err != io.EOF {
					return
				}
				break
			}
		}
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(n))
		c.Write(b[:])
	})
}

// Bulk writes to a ServeDiscard server over c for d, closes its write
// side, and waits for the server's count of what it received. It returns
// the bytes transferred one way and the time until the server had them
// all.
func Bulk(ctx context.Context, c net.Conn, d time.Duration) (int64, time.Duration, error) {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		return 0, 0, errors.New("bulk needs a connection with CloseWrite")
	}
	buf := make([]byte, 256<<10)
	start := time.Now()
	c.SetDeadline(start.Add(d + 30*time.Second))
	var sent int64
	for time.Since(start) < d && ctx.Err() == nil {
		n, err := c.Write(buf)
		sent += int64(n)
		if err != nil {
			return sent, time.Since(start), fmt.Errorf("write: %w", err)
		}
	}
	if err := cw.CloseWrite(); err != nil {
		return sent, time.Since(start), fmt.Errorf("close write: %w", err)
	}
	var b [8]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return sent, time.Since(start), fmt.Errorf("read count: %w", err)
	}
	elapsed := time.Since(start)
	if got := int64(binary.BigEndian.Uint64(b[:])); got != sent {
		return got, elapsed, fmt.Errorf("sent %d bytes, server received %d", sent, got)
	}
	return sent, elapsed, nil
}

// maxSource bounds how long a ServeSource connection may ask to be fed.
const maxSource = 10 * time.Minute

// ServeSource is the server side of Download: for every connection ln
// accepts it reads the duration the client asks for (8 bytes, big-endian
// nanoseconds, at most 10 minutes), writes data for that long, closes its
// write side, and then reads the client's count of what it received (8
// bytes) to check it. It returns nil when ln is closed.
func ServeSource(ln net.Listener) error {
	return serveEach(ln, func(c net.Conn) {
		var b [8]byte
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return
		}
		d := time.Duration(binary.BigEndian.Uint64(b[:]))
		if d <= 0 || d > maxSource {
			return
		}
		start := time.Now()
		c.SetDeadline(start.Add(d + 30*time.Second))
		buf := make([]byte, 256<<10)
		for time.Since(start) < d {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.ReadFull(c, b[:])
	})
}

// Download asks a ServeSource server over c to send for d and reads what
// it sends until it closes its side. It returns the bytes received and
// the time from the request to the last byte.
func Download(ctx context.Context, c net.Conn, d time.Duration) (int64, time.Duration, error) {
	if d <= 0 || d > maxSource {
		return 0, 0, fmt.Errorf("download for %v: want up to %v", d, maxSource)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(d))
	start := time.Now()
	c.SetDeadline(start.Add(d + 30*time.Second))
	if _, err := c.Write(b[:]); err != nil {
		return 0, 0, fmt.Errorf("request: %w", err)
	}
	buf := make([]byte, 256<<10)
	var got int64
	for ctx.Err() == nil {
		n, err := c.Read(buf)
		got += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return got, time.Since(start), fmt.Errorf("read: %w", err)
		}
	}
	elapsed := time.Since(start)
	binary.BigEndian.PutUint64(b[:], uint64(got))
	c.Write(b[:])
	return got, elapsed, ctx.Err()
}
