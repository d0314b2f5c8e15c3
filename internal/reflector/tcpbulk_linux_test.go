package reflector_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedTCPBulk: a kernel TCP client streams into the floor's
// TCP sink, whose count of what it took (the discard server's answer)
// equals what the client sent, and downloads from its TCP source for
// about the time asked for; the floors count the same bytes. Then again
// with 1% of the TCP frames dropped each way on the kernel's veth end
// (nftables): both transfers complete, and the source counts its
// retransmissions.
func TestPrivilegedTCPBulk(t *testing.T) {
	for _, loss := range []int{0, 1} {
		t.Run(fmt.Sprintf("loss%d", loss), func(t *testing.T) {
			if loss > 0 {
				vethtest.Tools(t, "nft")
			}
			p := vethtest.NewT(t, vethtest.Options{})
			const port = 7000
			f := startFloor(t, p, reflector.FloorConfig{Port: port})
			if loss > 0 {
				dropTCP(t, p.Kernel, loss)
			}
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
				t.Fatalf("bulk into the sink: %v (out of order %d)", err, f.TCPBulk.OutOfOrder.Load())
			}
			// Without loss a transfer moves at least a MiB in the
			// time; with it, a retransmission timeout may take most of
			// it (a lost SYN or SYN-ACK costs the client 1 s; a CI run
			// moved 256 KiB in 1.19 s so), and any progress, counted
			// whole by the sink, will do.
			least := int64(1 << 20)
			if loss > 0 {
				least = 1
			}
			if sent < least || f.TCPBulk.SinkBytes.Load() != sent {
				t.Errorf("sent %d bytes, the sink took %d", sent, f.TCPBulk.SinkBytes.Load())
			}
			t.Logf("sink: %d bytes in %v: %.2f Gbit/s, %d out of order", sent, el, float64(sent)*8/el.Seconds()/1e9, f.TCPBulk.OutOfOrder.Load())

			got, el, err := echo.Download(context.Background(), dial(port+2), d)
			if err != nil {
				t.Fatalf("download from the source: %v (retransmissions %d)", err, f.TCPBulk.Retransmits.Load())
			}
			if got < least || el < d || el > d+5*time.Second || f.TCPBulk.SourceBytes.Load() < got {
				t.Errorf("downloaded %d bytes in %v; the source sent %d", got, el, f.TCPBulk.SourceBytes.Load())
			}
			t.Logf("source: %d bytes in %v: %.2f Gbit/s, %d retransmissions", got, el, float64(got)*8/el.Seconds()/1e9, f.TCPBulk.Retransmits.Load())
			// The source's frames the rule drops are lost on the wire;
			// the kernel's own that it drops on egress are, for its
			// TCP, local transmit failures it sends again before they
			// leave, so the sink sees its ACKs lost, not its data.
			if loss > 0 && f.TCPBulk.Retransmits.Load() == 0 {
				t.Errorf("%d%% loss: no retransmission by the source", loss)
			}
		})
	}
}

// dropTCP installs, on the ingress and egress of h's veth end, an
// nftables table that drops pct% of the TCP frames each way (loss on the
// wire), and deletes it when t ends.
func dropTCP(t *testing.T, h *vethtest.Host, pct int) {
	t.Helper()
	const table = "reflector_loss"
	rules := fmt.Sprintf(`table netdev %[1]s {
	chain in {
		type filter hook ingress device %[2]s priority 0;
		meta protocol ip meta l4proto tcp numgen random mod 100 < %[3]d counter drop
	}
	chain out {
		type filter hook egress device %[2]s priority 0;
		meta protocol ip meta l4proto tcp numgen random mod 100 < %[3]d counter drop
	}
}
`, table, h.Link, pct)
	cmd := exec.Command("ip", "netns", "exec", h.Namespace, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install nftables loss rule: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "exec", h.Namespace, "nft", "delete", "table", "netdev", table).CombinedOutput(); err != nil {
			t.Errorf("delete nftables loss rule: %v: %s", err, out)
		}
	})
}
