package link

import (
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// TestWakeEntry: a notification that reaches a waiter's channel tells
// every worker it may have readied a goroutine; one the channel cannot
// take (a notification is already pending) does not, and a masked-out
// event reaches nobody.
func TestWakeEntry(t *testing.T) {
	e := &Endpoint{queues: []*queue{{}, {}}}
	woke := func() (n int) {
		for _, q := range e.queues {
			if q.takeWoke() {
				n++
			}
		}
		return n
	}
	var wq waiter.Queue
	entry, ch := e.NewWakeEntry(waiter.ReadableEvents)
	wq.EventRegister(&entry)
	defer wq.EventUnregister(&entry)

	wq.Notify(waiter.WritableEvents)
	if n := woke(); n != 0 || len(ch) != 0 {
		t.Fatalf("a writable event woke a reader (%d workers told)", n)
	}
	wq.Notify(waiter.ReadableEvents)
	if n := woke(); n != len(e.queues) || len(ch) != 1 {
		t.Fatalf("readable event: %d of %d workers told, %d queued", n, len(e.queues), len(ch))
	}
	wq.Notify(waiter.ReadableEvents)
	if n := woke(); n != 0 {
		t.Fatalf("a notification the full channel dropped told %d workers", n)
	}
	<-ch
	wq.Notify(waiter.ReadableEvents)
	if n := woke(); n != len(e.queues) {
		t.Fatalf("%d workers told once the channel had room again", n)
	}
}

// TestIdleYieldEvery: a spinning worker yields its P rarely only when the
// process has a P no worker holds, which runs what the worker's P readies.
func TestIdleYieldEvery(t *testing.T) {
	for _, c := range []struct{ procs, workers, want int }{
		{1, 1, spinYield},
		{2, 1, spinYieldShared},
		{2, 2, spinYield},
		{4, 2, spinYieldShared},
		{1, 2, spinYield},
	} {
		if got := idleYieldEvery(c.procs, c.workers); got != c.want {
			t.Errorf("GOMAXPROCS %d, %d workers: every %d polls, want %d", c.procs, c.workers, got, c.want)
		}
	}
}
