package faultio

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/stack/internal/memwire"
	"github.com/ustack-dev/ustack/xsk"
)

var (
	addrA = netip.MustParseAddr("198.18.1.1")
	addrB = netip.MustParseAddr("198.18.1.2")
)

// TestSeeded: the same seed draws the same faults, another seed others,
// each at its rate.
func TestSeeded(t *testing.T) {
	r := Rates{Drop: 0.1, Corrupt: 0.1, Duplicate: 0.1, Reorder: 0.1, Delay: 0.1}
	a, b := newDir(r, 5, 0), newDir(r, 5, 0)
	c := newDir(r, 6, 0)
	same, differ := true, false
	counts := map[fault]int{}
	for i := 0; i < 10000; i++ {
		x := a.draw()
		same = same && x == b.draw()
		differ = differ || x != c.draw()
		counts[x]++
	}
	if !same || !differ {
		t.Errorf("same seed same draws: %v; other seed other draws: %v", same, differ)
	}
	for k := faultDrop; k <= faultDelay; k++ {
		if n := counts[k]; n < 800 || n > 1200 {
			t.Errorf("fault %d drawn %d times in 10000 at rate 0.1", k, n)
		}
	}
}

// send writes frame into up to n frames of tx, enqueues them and kicks;
// it returns how many tx took.
func send(tx frameio.IO, frame []byte, out []xsk.Desc) int {
	tx.Complete()
	n := 0
	for ; n < len(out); n++ {
		a, ok := tx.Alloc()
		if !ok {
			break
		}
		out[n] = xsk.Desc{Addr: a, Len: uint32(copy(tx.Frame(a), frame))}
	}
	k := tx.Enqueue(out[:n])
	for _, d := range out[k:n] {
		tx.Free(d.Addr)
	}
	tx.Kick()
	return k
}

// TestAllocs: injecting faults allocates nothing per frame, and a stream
// of frames through RX and TX faults keeps every frame accounted for,
// the layers' own included, once they close.
func TestAllocs(t *testing.T) {
	pa, pb, err := memwire.New(1024, 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := Rates{Drop: 0.1, Corrupt: 0.1, Duplicate: 0.1, Reorder: 0.1, Delay: 0.1, DelayTime: time.Microsecond}
	tx := New(pa, Config{Seed: 1, TX: r}, 0)
	rx := New(pb, Config{Seed: 2, RX: r}, 0)
	frame := testpkt.UDP(addrA, addrB, 1, 2, make([]byte, 100))
	var descs [64]xsk.Desc
	var out [8]xsk.Desc
	step := func() {
		send(tx, frame, out[:])
		m := rx.Receive(descs[:])
		rx.Recycle(descs[:m])
	}
	for range 1000 { // warm up: slices reach their working size
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("%v allocations per batch of 8 frames through TX and RX faults", n)
	}
	time.Sleep(time.Millisecond)
	for range 10 {
		step()
	}
	var rs, ts frameio.Stats
	rx.ReadStats(&rs)
	tx.ReadStats(&ts)
	if rs.FaultsRX.Duplicated == 0 || ts.FaultsTX.Reordered == 0 || ts.FaultsTX.Delayed == 0 {
		t.Errorf("faults not drawn: rx %+v tx %+v", rs.FaultsRX, ts.FaultsTX)
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pa.FramesAccounted(pb); n != 1024 {
		t.Errorf("%d of 1024 frames accounted for", n)
	}
	if n := rx.OwnFramesOut(); n != 0 {
		t.Errorf("RX injector holds %d of its own frames", n)
	}
}

// TestDelayedReleasedByTimer: a delayed TX frame reaches the peer through
// the layer's own timer, with no further writes or kicks by its sender.
func TestDelayedReleasedByTimer(t *testing.T) {
	pa, pb, err := memwire.New(64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tx := New(pa, Config{TX: Rates{Delay: 1, DelayTime: 5 * time.Millisecond}}, 0)
	defer tx.Close()
	frame := testpkt.UDP(addrA, addrB, 1, 2, make([]byte, 10))
	var out [1]xsk.Desc
	start := time.Now()
	if send(tx, frame, out[:]) != 1 {
		t.Fatal("not enqueued")
	}
	var descs [4]xsk.Desc
	for {
		if n := pb.Receive(descs[:]); n > 0 {
			if !bytes.Equal(pb.Data(descs[0]), frame) {
				t.Errorf("delayed frame changed")
			}
			pb.Recycle(descs[:n])
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("delayed frame never released")
		}
		pb.Wait(10 * time.Millisecond)
	}
	if took := time.Since(start); took < 5*time.Millisecond {
		t.Errorf("delayed frame arrived after %v, want at least 5ms", took)
	}
}

// TestTxHook: the hook sees every frame sent, may change it, and drops
// those it refuses.
func TestTxHook(t *testing.T) {
	pa, pb, err := memwire.New(64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tx := New(pa, Config{}, 0)
	defer tx.Close()
	seen := 0
	tx.SetTxHook(func(f []byte) bool {
		seen++
		f[len(f)-1] = 0xaa
		return seen%2 == 0
	})
	frame := testpkt.UDP(addrA, addrB, 1, 2, make([]byte, 10))
	var out [4]xsk.Desc
	if n := send(tx, frame, out[:]); n != 4 {
		t.Fatalf("%d of 4 frames taken", n)
	}
	var descs [8]xsk.Desc
	n := pb.Receive(descs[:])
	if seen != 4 || n != 2 {
		t.Errorf("hook saw %d frames, %d arrived; want 4 and 2", seen, n)
	}
	for _, d := range descs[:n] {
		if b := pb.Data(d); b[len(b)-1] != 0xaa {
			t.Errorf("frame not changed by the hook")
		}
	}
	pb.Recycle(descs[:n])
	tx.SetTxHook(nil)
	if send(tx, frame, out[:1]) != 1 || pb.Receive(descs[:]) != 1 || seen != 4 {
		t.Errorf("hook removed: the frame must pass unseen")
	}
}
