package stack

import (
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// TestWakeEntry: a notification that reaches a waiter's channel tells the
// worker it may have readied a goroutine; one the channel cannot take
// (a notification is already pending) does not, and a masked-out event
// reaches nobody.
func TestWakeEntry(t *testing.T) {
	e := &endpoint{}
	var wq waiter.Queue
	entry, ch := e.newWakeEntry(waiter.ReadableEvents)
	wq.EventRegister(&entry)
	defer wq.EventUnregister(&entry)

	wq.Notify(waiter.WritableEvents)
	if e.woke.Load() || len(ch) != 0 {
		t.Fatal("a writable event woke a reader")
	}
	wq.Notify(waiter.ReadableEvents)
	if !e.woke.Swap(false) || len(ch) != 1 {
		t.Fatalf("readable event: woke not set or nothing sent (%d queued)", len(ch))
	}
	wq.Notify(waiter.ReadableEvents)
	if e.woke.Load() {
		t.Fatal("a notification the full channel dropped set woke")
	}
	<-ch
	wq.Notify(waiter.ReadableEvents)
	if !e.woke.Load() {
		t.Fatal("woke not set once the channel had room again")
	}
}
