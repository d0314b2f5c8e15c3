package stack

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/seqnum"
)

// windowTap follows the receive window one side of a TCP connection
// advertises, from the frames that side transmits (a memEnd mangle hook:
// it sees every frame the port enqueues, in order).
type windowTap struct {
	mu       sync.Mutex
	scale    uint8
	synSeen  bool
	edge     seqnum.Value // highest right edge advertised so far
	shrunk   []string     // advertisements that moved the edge left
	zeroWnds int          // advertisements of a zero window
	acks     int
}

func (w *windowTap) frame(f []byte) {
	if len(f) < ethHeaderLen+header.IPv4MinimumSize {
		return
	}
	eth := header.Ethernet(f)
	if eth.Type() != header.IPv4ProtocolNumber {
		return
	}
	ip := header.IPv4(f[ethHeaderLen:])
	if ip.TransportProtocol() != header.TCPProtocolNumber {
		return
	}
	tcp := header.TCP(ip.Payload())
	w.mu.Lock()
	defer w.mu.Unlock()
	if tcp.Flags().Contains(header.TCPFlagSyn) {
		opts := header.ParseSynOptions(tcp.Options(), tcp.Flags().Contains(header.TCPFlagAck))
		if opts.WS > 0 {
			w.scale = uint8(opts.WS)
		}
		w.synSeen = true
		w.edge = seqnum.Value(tcp.AckNumber()).Add(seqnum.Size(tcp.WindowSize()))
		return
	}
	if !w.synSeen || !tcp.Flags().Contains(header.TCPFlagAck) || tcp.Flags().Contains(header.TCPFlagRst) {
		return
	}
	w.acks++
	wnd := seqnum.Size(tcp.WindowSize()) << w.scale
	if wnd == 0 {
		w.zeroWnds++
	}
	edge := seqnum.Value(tcp.AckNumber()).Add(wnd)
	if edge.LessThan(w.edge) {
		if len(w.shrunk) < 5 {
			w.shrunk = append(w.shrunk, fmt.Sprintf("ack %d window %d puts the edge %d bytes left of %d", tcp.AckNumber(), wnd, edge.Size(w.edge), w.edge))
		} else {
			w.shrunk = append(w.shrunk, "")
		}
		return
	}
	w.edge = edge
}

// TestMemWindowNeverShrinks fills a receiver whose application does not
// read, with segments that are not multiples of the window scale unit, and
// checks that no advertisement moves the right edge of the window left of
// one already advertised (RFC 9293 §3.8.6.2.2, RFC 7323 §2.4; Linux's
// tcp_select_window rounds up). Upstream netstack rounds the scaled
// window down, shrinking the window by up to one scale unit on every
// advertisement once the buffer stops draining, and then rejects
// segments the peer had been allowed to send.
func TestMemWindowNeverShrinks(t *testing.T) {
	mp := newMemPair(t, Spin)
	tap := &windowTap{}
	mp.pb.setMangle(tap.frame) // B, the receiver, transmits through pb
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 9).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan io.ReadCloser, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), 9).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer srv.Close()

	// Write 1000-byte chunks until the writer is blocked for a while:
	// the receiver's buffer and then the sender's are full.
	chunk := bytes.Repeat([]byte{'x'}, 1000)
	written := 0
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for written < 64<<20 {
			c.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
			n, err := c.Write(chunk)
			written += n
			if err != nil {
				return
			}
		}
	}()
	<-done
	tap.mu.Lock()
	scale, zero, acks, shrunk := tap.scale, tap.zeroWnds, tap.acks, tap.shrunk
	tap.mu.Unlock()
	t.Logf("wrote %d bytes before blocking; receiver window scale %d, %d ACKs, %d zero windows", written, scale, acks, zero)
	if scale == 0 {
		t.Fatal("receiver did not scale its window: the test needs a scale to round")
	}
	if zero == 0 {
		t.Fatal("receiver never advertised a zero window: its buffer did not fill")
	}
	if len(shrunk) > 0 {
		t.Errorf("receiver shrank its window %d times, first: %v", len(shrunk), shrunk[0])
	}

	// Everything written arrives once the application reads.
	go func() {
		c.SetWriteDeadline(time.Time{})
		c.Close()
	}()
	srv.(interface{ SetReadDeadline(time.Time) error }).SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, srv)
	if err != nil {
		t.Fatalf("read after %d bytes: %v", n, err)
	}
	if int(n) != written {
		t.Fatalf("read %d bytes, %d were written", n, written)
	}
}
