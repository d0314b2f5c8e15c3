package ring

import (
	"errors"
	"sync"
	"testing"
	"unsafe"
)

// newAt builds an in-process ring whose indices start at start, to exercise
// the 32-bit index wraparound.
func newAt[T any](t testing.TB, size, start uint32) (*Producer[T], *Consumer[T]) {
	t.Helper()
	ix := new(indices)
	ix.producer.Store(start)
	ix.consumer.Store(start)
	s := shared[T]{producer: &ix.producer, consumer: &ix.consumer, flags: &ix.flags, descs: make([]T, size), mask: size - 1}
	return newProducer(s), newConsumer(s)
}

func TestNewRejectsBadSizes(t *testing.T) {
	for _, size := range []uint32{0, 3, 6, 1000, 1<<31 + 1} {
		if _, _, err := New[uint64](size); !errors.Is(err, ErrSize) {
			t.Errorf("New(%d) error = %v, want ErrSize", size, err)
		}
	}
	for _, size := range []uint32{1, 2, 4096} {
		if _, _, err := New[uint64](size); err != nil {
			t.Errorf("New(%d): %v", size, err)
		}
	}
}

func TestFullAndEmpty(t *testing.T) {
	p, c, _ := New[uint64](8)
	if _, n := c.Peek(4); n != 0 {
		t.Fatalf("peek on empty ring got %d", n)
	}
	idx, n := p.Reserve(10)
	if n != 8 {
		t.Fatalf("reserve 10 on empty 8-ring got %d, want 8", n)
	}
	for i := uint32(0); i < n; i++ {
		*p.At(idx + i) = uint64(100 + i)
	}
	if _, n := c.Peek(1); n != 0 {
		t.Fatal("consumer saw entries before Submit")
	}
	p.Submit(n)
	if _, n := p.Reserve(1); n != 0 {
		t.Fatalf("reserve on full ring got %d", n)
	}
	idx, n = c.Peek(3)
	if n != 3 || *c.At(idx) != 100 || *c.At(idx + 2) != 102 {
		t.Fatalf("peek 3: n=%d first=%d", n, *c.At(idx))
	}
	if _, n := p.Reserve(1); n != 0 {
		t.Fatal("producer got slots before consumer Release")
	}
	c.Release(3)
	if _, n := p.Reserve(5); n != 3 {
		t.Fatalf("reserve after releasing 3 got %d, want 3", n)
	}
}

func TestWraparound(t *testing.T) {
	// Start just below 2^32 so the indices overflow during the test, and
	// move a prime number of entries per batch so batches straddle the
	// end of the descriptor array.
	p, c := newAt[uint64](t, 16, ^uint32(0)-20)
	var next, want uint64
	for round := 0; round < 100; round++ {
		idx, n := p.Reserve(7)
		for i := uint32(0); i < n; i++ {
			*p.At(idx + i) = next
			next++
		}
		p.Submit(n)
		idx, n = c.Peek(5)
		for i := uint32(0); i < n; i++ {
			if got := *c.At(idx + i); got != want {
				t.Fatalf("round %d: got %d, want %d", round, got, want)
			}
			want++
		}
		c.Release(n)
	}
	for {
		idx, n := c.Peek(16)
		if n == 0 {
			break
		}
		for i := uint32(0); i < n; i++ {
			if got := *c.At(idx + i); got != want {
				t.Fatalf("drain: got %d, want %d", got, want)
			}
			want++
		}
		c.Release(n)
	}
	if want != next {
		t.Fatalf("consumed %d, produced %d", want, next)
	}
}

func TestCancel(t *testing.T) {
	p, c, _ := New[uint64](8)
	idx, n := p.Reserve(4)
	for i := uint32(0); i < n; i++ {
		*p.At(idx + i) = uint64(i)
	}
	p.Cancel(2)
	if got := p.Pending(); got != 2 {
		t.Fatalf("pending after cancel = %d, want 2", got)
	}
	p.Submit(2)
	if q := p.Queued(); q != 2 {
		t.Fatalf("queued = %d, want 2", q)
	}
	// The cancelled slots are handed out again by the next Reserve.
	idx2, _ := p.Reserve(1)
	if idx2 != idx+2 {
		t.Fatalf("reserve after cancel at %d, want %d", idx2, idx+2)
	}
	*p.At(idx2) = 42
	p.Submit(1)

	ci, n := c.Peek(8)
	if n != 3 {
		t.Fatalf("peek got %d, want 3", n)
	}
	c.Cancel(1)
	c.Release(2)
	ci2, n := c.Peek(8)
	if n != 1 || ci2 != ci+2 || *c.At(ci2) != 42 {
		t.Fatalf("peek after consumer cancel: n=%d idx=%d val=%d", n, ci2, *c.At(ci2))
	}
	c.Release(1)
	if got := p.Free(8); got != 8 {
		t.Fatalf("free after draining = %d, want 8", got)
	}
}

func TestConcurrentProducerConsumer(t *testing.T) {
	const total = 200000
	p, c, _ := New[uint64](64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var next uint64
		for next < total {
			idx, n := p.Reserve(uint32(1 + next%13))
			for i := uint32(0); i < n && next < total; i++ {
				*p.At(idx + i) = next
				next++
			}
			// Submit only what was written; cancel the tail past total.
			written := n
			if next == total {
				written = uint32(next - uint64(*p.At(idx)))
				p.Cancel(n - written)
			}
			p.Submit(written)
		}
	}()
	var want uint64
	for want < total {
		idx, n := c.Peek(17)
		for i := uint32(0); i < n; i++ {
			if got := *c.At(idx + i); got != want {
				t.Errorf("got %d, want %d", got, want)
				return
			}
			want++
		}
		c.Release(n)
	}
	wg.Wait()
}

func TestMapValidatesLayout(t *testing.T) {
	mem := make([]byte, 4096)
	ok := Offsets{Producer: 0, Consumer: 64, Flags: 128, Desc: 256}
	if _, err := MapProducer[uint64](mem, ok, 64); err != nil {
		t.Fatalf("valid layout: %v", err)
	}
	if _, err := MapConsumer[uint64](mem, ok, 1024); err == nil {
		t.Error("descriptors past the mapping accepted")
	}
	if _, err := MapConsumer[uint64](mem, Offsets{Producer: 4094, Consumer: 64, Flags: 128, Desc: 256}, 8); err == nil {
		t.Error("producer offset past the mapping accepted")
	}
	if _, err := MapProducer[uint64](mem, Offsets{Producer: 2, Consumer: 64, Flags: 128, Desc: 256}, 8); err == nil {
		t.Error("misaligned producer offset accepted")
	}
	if _, err := MapProducer[uint64](mem, ok, 12); !errors.Is(err, ErrSize) {
		t.Errorf("non-power-of-two size: %v", err)
	}
}

func TestMappedViewsShareMemory(t *testing.T) {
	// Two views mapped over the same bytes behave as one ring, as the
	// kernel and ustack do over an AF_XDP mapping.
	buf := make([]uint64, 512) // 8-byte aligned backing
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*8)
	off := Offsets{Producer: 0, Consumer: 64, Flags: 128, Desc: 192}
	p, err := MapProducer[uint64](mem, off, 32)
	if err != nil {
		t.Fatal(err)
	}
	c, err := MapConsumer[uint64](mem, off, 32)
	if err != nil {
		t.Fatal(err)
	}
	idx, n := p.Reserve(3)
	for i := uint32(0); i < n; i++ {
		*p.At(idx + i) = 7 * uint64(i+1)
	}
	p.Submit(n)
	ci, m := c.Peek(8)
	if m != 3 || *c.At(ci + 1) != 14 {
		t.Fatalf("mapped consumer: n=%d second=%d", m, *c.At(ci + 1))
	}
	if buf[0] != 3 {
		t.Fatalf("producer word in memory = %d, want 3", buf[0])
	}
	buf[16] = 1 // flags word at offset 128
	if p.Flags() != 1 || c.Flags() != 1 {
		t.Fatal("flags word not read from the mapping")
	}
}

// BenchmarkThroughput moves descriptors between two goroutines through a
// 2048-entry ring in batches of 64, the AF_XDP default shape.
func BenchmarkThroughput(b *testing.B) {
	p, c, _ := New[uint64](2048)
	const batch = 64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for got := 0; got < b.N; {
			idx, n := c.Peek(batch)
			for i := uint32(0); i < n; i++ {
				_ = *c.At(idx + i)
			}
			c.Release(n)
			got += int(n)
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		want := uint32(batch)
		if left := b.N - sent; left < batch {
			want = uint32(left)
		}
		idx, n := p.Reserve(want)
		for i := uint32(0); i < n; i++ {
			*p.At(idx + i) = uint64(sent) + uint64(i)
		}
		p.Submit(n)
		sent += int(n)
	}
	<-done
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mdesc/s")
}

// TestBacklog: Backlog counts what waits past the consumer's claims,
// seeing submissions its cached index has not, across the wrap.
func TestBacklog(t *testing.T) {
	p, c := newAt[uint64](t, 8, 1<<32-3)
	if n := c.Backlog(); n != 0 {
		t.Fatalf("empty ring: backlog %d", n)
	}
	_, n := p.Reserve(5)
	p.Submit(n)
	if _, got := c.Peek(2); got != 2 {
		t.Fatalf("peeked %d, want 2", got)
	}
	if n := c.Backlog(); n != 3 {
		t.Fatalf("backlog %d after peeking 2 of 5, want 3", n)
	}
	_, n = p.Reserve(2)
	p.Submit(n)
	if n := c.Backlog(); n != 5 {
		t.Fatalf("backlog %d after 2 more, want 5", n)
	}
}
