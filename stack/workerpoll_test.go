package stack

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// pollSink collects what a worker-read connection delivers.
type pollSink struct {
	mu        sync.Mutex
	got       bytes.Buffer
	offWorker int // consume calls not on a worker's goroutine
	calls     int
	reads     int  // consumed calls
	woke      bool // what consumed returns
	done      chan error
}

func newPollSink() *pollSink { return &pollSink{done: make(chan error, 1)} }

func (s *pollSink) consume(b []byte) {
	var st [8 << 10]byte
	n := runtime.Stack(st[:], false)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if !strings.Contains(string(st[:n]), "link.(*Endpoint).worker(") {
		s.offWorker++
	}
	s.got.Write(b)
}

func (s *pollSink) consumed() bool {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.woke
}

func (s *pollSink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Len()
}

func (s *pollSink) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("done not called")
		return nil
	}
}

// TestMemPollOnWorker: a connection handed to the worker has every byte
// delivered in order, on the worker's goroutine, including what arrived
// before the hand-over; Read is refused; done reports the peer's close
// as io.EOF and the connection's own Close as net.ErrClosed.
func TestMemPollOnWorker(t *testing.T) {
	for _, poll := range []PollPolicy{Spin, Adaptive, Blocking} {
		t.Run(poll.String(), func(t *testing.T) {
			mp := newMemPair(t, poll)
			client, server := dialPair(t, mp, 7100)
			early := []byte("sent before the worker reads")
			if _, err := client.Write(early); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // let it reach the receive queue
			sink := newPollSink()
			pw := server.(*tcpConn)
			if err := pw.PollOnWorker(sink.consume, nil, func(err error) { sink.done <- err }); err == nil {
				t.Fatal("PollOnWorker without consumed: no error")
			}
			if err := pw.PollOnWorker(sink.consume, sink.consumed, func(err error) { sink.done <- err }); err != nil {
				t.Fatal(err)
			}
			if err := pw.PollOnWorker(sink.consume, sink.consumed, func(error) {}); err == nil {
				t.Fatal("second PollOnWorker: no error")
			}
			if _, err := server.Read(make([]byte, 10)); !errors.Is(err, errPolled) {
				t.Fatalf("Read on a worker-read connection: %v, want %v", err, errPolled)
			}
			data := make([]byte, 4<<20)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			// Writes of every size, so reads end anywhere.
			for off := 0; off < len(data); {
				n := min(len(data)-off, 1+rng.IntN(70000))
				if _, err := client.Write(data[off : off+n]); err != nil {
					t.Fatal(err)
				}
				off += n
			}
			client.Close()
			if err := sink.wait(t); err != io.EOF {
				t.Fatalf("done after the peer's close: %v, want EOF", err)
			}
			want := append(append([]byte(nil), early...), data...)
			sink.mu.Lock()
			defer sink.mu.Unlock()
			if sink.got.Len() != len(want) || sha256.Sum256(sink.got.Bytes()) != sha256.Sum256(want) {
				t.Fatalf("got %d bytes, want %d (or they differ)", sink.got.Len(), len(want))
			}
			if sink.offWorker != 0 {
				t.Fatalf("%d of %d consume calls off the worker", sink.offWorker, sink.calls)
			}
			if sink.reads == 0 || sink.reads > sink.calls {
				t.Fatalf("consumed called %d times for %d consume calls", sink.reads, sink.calls)
			}
		})
	}
}

// TestMemPollOnWorkerClose: closing a worker-read connection ends its
// reading with net.ErrClosed, once.
func TestMemPollOnWorkerClose(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	client, server := dialPair(t, mp, 7101)
	sink := newPollSink()
	if err := server.(*tcpConn).PollOnWorker(sink.consume, sink.consumed, func(err error) { sink.done <- err }); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for sink.len() < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	server.Close()
	if err := sink.wait(t); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("done after Close: %v, want net.ErrClosed", err)
	}
	client.Write([]byte("more")) // after the close: never delivered
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-sink.done:
		t.Fatalf("done called twice (%v)", err)
	default:
	}
	if sink.len() != 5 {
		t.Fatalf("%d bytes delivered, want 5", sink.len())
	}
	if err := server.(*tcpConn).PollOnWorker(sink.consume, sink.consumed, func(error) {}); err == nil {
		t.Fatal("PollOnWorker on a closed connection: no error")
	}
}

// TestMemPollOnWorkerYields: the worker yields its P after a batch it
// read for a consumer only if the consumer says it readied a goroutine
// (consumed returns true); otherwise it goes on polling, since a yield
// with idle Ps wakes a thread for nothing.
func TestMemPollOnWorkerYields(t *testing.T) {
	const msgs = 100
	for _, woke := range []bool{false, true} {
		t.Run(fmt.Sprintf("woke=%v", woke), func(t *testing.T) {
			mp := newMemPair(t, Spin)
			client, server := dialPair(t, mp, 7102)
			sink := newPollSink()
			sink.woke = woke
			if err := server.(*tcpConn).PollOnWorker(sink.consume, sink.consumed, func(err error) { sink.done <- err }); err != nil {
				t.Fatal(err)
			}
			yields := func() (n uint64) {
				for i := range mp.b.ep.NumQueues() {
					n += mp.b.ep.Counters(i).RxYields
				}
				return n
			}
			before := yields()
			for i := 1; i <= msgs; i++ {
				if _, err := client.Write([]byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
				for deadline := time.Now().Add(10 * time.Second); sink.len() < i; time.Sleep(50 * time.Microsecond) {
					if time.Now().After(deadline) {
						t.Fatalf("message %d not consumed", i)
					}
				}
			}
			got := yields() - before
			if woke && got < msgs/2 {
				t.Errorf("%d yields for %d inputs whose consumer readied a goroutine", got, msgs)
			}
			if !woke && got > 5 {
				t.Errorf("%d yields for %d inputs that readied nothing", got, msgs)
			}
		})
	}
}
