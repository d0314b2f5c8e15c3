package stack

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/ustack-dev/ustack/stack/internal/pcapio"
)

// readCapture parses a pcap file and returns its records.
func readCapture(t *testing.T, b []byte) (*pcapgo.Reader, [][]byte, []int) {
	t.Helper()
	r, err := pcapgo.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	var lengths []int
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("record %d: %v", len(frames), err)
		}
		frames = append(frames, data)
		lengths = append(lengths, ci.Length)
	}
	return r, frames, lengths
}

// TestMemCapture records B's side of an echo session over the memory
// wire and checks the file: Ethernet link type, one record per frame B
// received and sent, the frames themselves, and the snap length.
func TestMemCapture(t *testing.T) {
	for _, snap := range []int{0, 96} {
		var buf bytes.Buffer
		mp := newMemPairWith(t, Adaptive, func(c *Config) { c.Capture = &Capture{W: &buf, SnapLen: snap} })
		ln, err := mp.b.Listen("tcp", ":7")
		if err != nil {
			t.Fatal(err)
		}
		echo(t, ln)
		c, err := mp.a.Dial("tcp", netip.AddrPortFrom(memB4.Addr(), 7).String())
		if err != nil {
			t.Fatal(err)
		}
		pingPong(t, c, 50)
		c.Close()
		ln.Close()
		time.Sleep(50 * time.Millisecond)
		mp.a.Close()
		if err := mp.b.Close(); err != nil {
			t.Fatal(err)
		}
		st := mp.b.Stats()
		r, frames, lengths := readCapture(t, buf.Bytes())
		if r.LinkType() != layers.LinkTypeEthernet {
			t.Errorf("link type %v", r.LinkType())
		}
		// A frame that found the TX ring full is recorded, freed, and
		// recorded again when netstack retries it.
		q := st.Queues[0]
		if want := q.RxPackets + q.TxFrames + q.TxRingFull; uint64(len(frames)) != want || st.Capture.Packets != want {
			t.Errorf("snap %d: %d records (stats say %d), want %d frames received, sent and found the TX ring full (%d)", snap, len(frames), st.Capture.Packets, want, q.TxRingFull)
		}
		if st.Capture.Bytes+pcapio.FileHeaderLen != uint64(buf.Len()) {
			t.Errorf("capture stats count %d bytes, file has %d", st.Capture.Bytes, buf.Len())
		}
		tcp := 0
		for i, f := range frames {
			if snap > 0 && len(f) > snap {
				t.Fatalf("record %d: %d bytes over snap length %d", i, len(f), snap)
			}
			if snap == 0 && len(f) != lengths[i] {
				t.Fatalf("record %d: %d of %d bytes captured without a snap length", i, len(f), lengths[i])
			}
			if s, ok := parseTCP4(f); ok && (s.srcPort == 7 || s.dstPort == 7) {
				tcp++
			}
		}
		if snap == 0 && tcp < 100 {
			t.Errorf("%d TCP segments of the echo session captured, want at least 100", tcp)
		}
	}
}

// TestMemCaptureBound checks that a capture stops at its size bound and
// counts what it left out.
func TestMemCaptureBound(t *testing.T) {
	var buf bytes.Buffer
	const bound = 4096
	mp := newMemPairWith(t, Adaptive, func(c *Config) { c.Capture = &Capture{W: &buf, MaxBytes: bound} })
	ln, err := mp.b.Listen("tcp", ":7")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echo(t, ln)
	c, err := mp.a.Dial("tcp", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	pingPong(t, c, 50)
	c.Close()
	if err := mp.b.Close(); err != nil {
		t.Fatal(err)
	}
	st := mp.b.Stats().Capture
	if buf.Len() > bound || st.Dropped == 0 || st.Packets == 0 {
		t.Errorf("capture of %d bytes with bound %d: %+v", buf.Len(), bound, st)
	}
	_, frames, _ := readCapture(t, buf.Bytes())
	if uint64(len(frames)) != st.Packets {
		t.Errorf("%d records, stats say %d", len(frames), st.Packets)
	}
}

// TestCaptureValidate: bad capture settings are refused.
func TestCaptureValidate(t *testing.T) {
	for _, c := range []Capture{{}, {W: io.Discard, SnapLen: -1}, {W: io.Discard, SnapLen: 1 << 20}, {W: io.Discard, MaxBytes: 10}} {
		cfg := Config{Addrs: []netip.Prefix{memA4}, Capture: &c}
		cfg.setDefaults()
		if err := cfg.validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: validate = %v, want ErrConfig", c, err)
		}
	}
}
