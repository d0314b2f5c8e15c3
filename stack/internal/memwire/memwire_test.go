package memwire

import (
	"bytes"
	"testing"

	"github.com/ustack-dev/ustack/xsk"
)

// TestKickDeliversAndFramesReturn: an enqueued frame reaches the peer
// only after a kick, unchanged, and once the peer recycles it every frame
// of the sender's pool is accounted for again.
func TestKickDeliversAndFramesReturn(t *testing.T) {
	a, b, err := New(8, 2048)
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := a.Alloc()
	if !ok {
		t.Fatal("no frame")
	}
	n := copy(a.Frame(addr), "hello, wire")
	if a.Enqueue([]xsk.Desc{{Addr: addr, Len: uint32(n)}}) != 1 {
		t.Fatal("not enqueued")
	}
	var descs [4]xsk.Desc
	if got := b.Receive(descs[:]); got != 0 || a.TxQueued() != 1 {
		t.Fatalf("before the kick: %d received, %d queued; want 0 and 1", got, a.TxQueued())
	}
	if err := a.Kick(); err != nil {
		t.Fatal(err)
	}
	if got := b.Receive(descs[:]); got != 1 || !bytes.Equal(b.Data(descs[0]), []byte("hello, wire")) {
		t.Fatalf("after the kick: %d frames, %q", got, b.Data(descs[0]))
	}
	b.Recycle(descs[:1])
	if got := a.FramesAccounted(b); got != 8 {
		t.Errorf("%d of 8 frames accounted for", got)
	}
	if got := a.IdleFrames(); got != 8 {
		t.Errorf("%d of 8 frames idle", got)
	}
}
