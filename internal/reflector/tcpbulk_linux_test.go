package reflector_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedTCPBulk: a kernel TCP client streams into the floor's
// TCP sink, whose count of what it took (the discard server's answer)
// equals what the client sent, and downloads from its TCP source for
// about the time asked for, every byte in order; the floors count the
// same bytes, and a loss, if any, is counted and logged.
func TestPrivilegedTCPBulk(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{})
	const port = 7000
	f := startFloor(t, p, reflector.FloorConfig{Port: port})
	dial := func(port uint16) net.Conn {
		t.Helper()
		var c net.Conn
		if err := p.Kernel.Do(func() (err error) {
			c, err = net.DialTimeout("tcp", netip.AddrPortFrom(vethtest.UstackIPv4, port).String(), 2*time.Second)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	const d = 300 * time.Millisecond
	sent, el, err := echo.Bulk(context.Background(), dial(port+1), d)
	if err != nil {
		t.Fatalf("bulk into the sink: %v", err)
	}
	if sent < 1<<20 || f.TCPBulk.SinkBytes.Load() != sent {
		t.Errorf("sent %d bytes, the sink took %d", sent, f.TCPBulk.SinkBytes.Load())
	}
	t.Logf("sink: %d bytes in %v: %.2f Gbit/s, %d out of order", sent, el, float64(sent)*8/el.Seconds()/1e9, f.TCPBulk.OutOfOrder.Load())

	got, el, err := echo.Download(context.Background(), dial(port+2), d)
	if err != nil {
		t.Fatalf("download from the source: %v", err)
	}
	if got < 1<<20 || el < d || el > d+2*time.Second || f.TCPBulk.SourceBytes.Load() < got {
		t.Errorf("downloaded %d bytes in %v; the source sent %d", got, el, f.TCPBulk.SourceBytes.Load())
	}
	t.Logf("source: %d bytes in %v: %.2f Gbit/s, %d retransmissions", got, el, float64(got)*8/el.Seconds()/1e9, f.TCPBulk.Retransmits.Load())
}
