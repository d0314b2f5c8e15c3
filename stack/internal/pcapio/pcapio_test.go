package pcapio

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/stack/internal/memwire"
)

// BenchmarkRecord measures recording one 1514-byte frame; it must not
// allocate.
func BenchmarkRecord(b *testing.B) {
	w, err := NewWriter(Config{W: io.Discard, MaxBytes: 1 << 62})
	if err != nil {
		b.Fatal(err)
	}
	frame := make([]byte, 1514)
	now := time.Now()
	if n := testing.AllocsPerRun(100, func() { w.Record(frame, now) }); n != 0 {
		b.Fatalf("%v allocations per record", n)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		w.Record(frame, now)
	}
}

// TestRecordAllocs: recording a frame does not allocate.
func TestRecordAllocs(t *testing.T) {
	w, err := NewWriter(Config{W: io.Discard, MaxBytes: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 1514)
	now := time.Now()
	if n := testing.AllocsPerRun(1000, func() { w.Record(frame, now) }); n != 0 {
		t.Errorf("%v allocations per record", n)
	}
}

// TestLastCloseFlushes: the layers share the writer's buffer, and only
// the last one's Close writes it out.
func TestLastCloseFlushes(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(Config{W: &buf})
	if err != nil {
		t.Fatal(err)
	}
	a, b, err := memwire.New(8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	la, lb := w.Wrap(a), w.Wrap(b)
	w.Record(make([]byte, 60), time.Now())
	if err := la.Close(); err != nil || buf.Len() != 0 {
		t.Fatalf("first close: %v, %d bytes written; want nothing yet", err, buf.Len())
	}
	if err := lb.Close(); err != nil || buf.Len() != FileHeaderLen+recordLen+60 {
		t.Fatalf("last close: %v, %d bytes written; want the header and one record", err, buf.Len())
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestCloseReportsWriteError: a writer that fails is reported when the
// capture is flushed (the header goes through the buffer).
func TestCloseReportsWriteError(t *testing.T) {
	w, err := NewWriter(Config{W: failWriter{}})
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := memwire.New(8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Wrap(a).Close(); err == nil || err.Error() != "flush capture: disk full" {
		t.Errorf("close of a capture to a failing writer: %v, want flush capture: disk full", err)
	}
}
