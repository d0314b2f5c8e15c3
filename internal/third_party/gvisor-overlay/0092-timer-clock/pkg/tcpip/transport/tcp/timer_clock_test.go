package tcp

import (
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// TestTimersByTarget: the shared clock runs due timers earliest target
// first (ustack, patch 0092), as their own clock timers queued on the
// endpoint's lock did: a reordering timeout due before the retransmission
// timeout runs first, and its retransmission moves the RTO's target.
func TestTimersByTarget(t *testing.T) {
	at := func(ms int) tcpip.MonotonicTime {
		return tcpip.MonotonicTime{}.Add(time.Duration(ms) * time.Millisecond)
	}
	keepalive, resend, probe, reorder, cork, delack := &timer{target: at(7200000)}, &timer{target: at(210)}, &timer{target: at(40)}, &timer{target: at(205)}, &timer{target: at(40)}, &timer{target: at(1)}
	// The order timerClockFired collects them in.
	ts := []*timer{keepalive, resend, probe, reorder, cork, delack}
	byTarget(ts)
	want := []*timer{delack, probe, cork, reorder, resend, keepalive}
	for i := range want {
		if ts[i] != want[i] {
			t.Fatalf("position %d: target %v, want %v", i, ts[i].target, want[i].target)
		}
	}
}
