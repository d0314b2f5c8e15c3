package stack

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/stack/internal/pcapio"
	"github.com/ustack-dev/ustack/vethtest"
)

// tsharkCount runs tshark on file with a display filter and returns how
// many packets match.
func tsharkCount(t *testing.T, file, filter string) int {
	t.Helper()
	out, err := exec.Command("tshark", "-n", "-r", file, "-Y", filter, "-T", "fields", "-e", "frame.number").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("tshark -r %s -Y %q: %v\n%s", file, filter, err, stderr)
	}
	return len(strings.Fields(string(out)))
}

// TestPrivilegedCaptureReadByTshark captures a TCP echo session between a
// kernel client and ustack on a veth pair, then has tshark read the file:
// no malformed packets, and as many TCP segments as netstack sent and
// received.
func TestPrivilegedCaptureReadByTshark(t *testing.T) {
	vethtest.Tools(t, "tshark")
	file := filepath.Join(t.TempDir(), "ustack.pcap")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // after the stack's Close, which flushes
	p, s := newVethStack(t, vethtest.Options{KernelTxChecksumOff: true}, Config{Capture: &Capture{W: f}})
	ln, err := s.Listen("tcp", netip.AddrPortFrom(vethtest.UstackIPv4, 7007).String())
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	c, err := kernelDial(context.Background(), p, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	pingPong(t, c, 100)
	c.Close()
	ln.Close()
	// Let the closing handshake finish before the stack closes: a last
	// ACK arriving while it closes would be captured but never reach
	// netstack's counters.
	settleSegments(s, 5*time.Second)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	total := tsharkCount(t, file, "frame")
	if uint64(total) != st.Capture.Packets || total == 0 {
		t.Errorf("tshark read %d frames, ustack recorded %d", total, st.Capture.Packets)
	}
	if n := tsharkCount(t, file, "_ws.malformed || _ws.expert.severity == error"); n != 0 {
		t.Errorf("tshark finds %d malformed packets", n)
	}
	tcp := tsharkCount(t, file, "tcp.port == 7007")
	// The capture sees frames: received segments GRO merged before
	// netstack counted them appear there one by one.
	var coalesced uint64
	for _, q := range st.Queues {
		coalesced += q.RxCoalesced
	}
	if want := st.TCP.SegmentsSent + st.TCP.SegmentsReceived + coalesced; uint64(tcp) != want {
		t.Errorf("tshark counts %d TCP segments, netstack sent %d and received %d, and GRO merged %d frames away", tcp, st.TCP.SegmentsSent, st.TCP.SegmentsReceived, coalesced)
	}
	if data := tsharkCount(t, file, "tcp.port == 7007 && tcp.len > 0"); data < 200 {
		t.Errorf("%d TCP segments with data, want at least the 100 requests and 100 replies", data)
	}
	t.Logf("capture: %d frames, %d TCP segments, %s bytes", total, tcp, strconv.FormatUint(st.Capture.Bytes+pcapio.FileHeaderLen, 10))
}

// settleSegments waits, at most max, until s has sent and received no TCP
// segment for 200ms.
func settleSegments(s *Stack, max time.Duration) {
	count := func() uint64 { st := s.Stats(); return st.TCP.SegmentsSent + st.TCP.SegmentsReceived }
	last, since := count(), time.Now()
	for end := time.Now().Add(max); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n := count(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= 200*time.Millisecond {
			return
		}
	}
}
