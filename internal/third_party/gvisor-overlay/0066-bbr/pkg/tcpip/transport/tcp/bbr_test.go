// Copyright 2026 The ustack Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package tcp

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestMaxFilterWindowedMax checks the windowed maximum on random samples
// whose times advance irregularly. Kathleen Nichols' filter keeps three
// candidates rather than the whole window, so it can miss a sample that
// was never among them; what it guarantees, and what is checked, is that
// it returns a sample taken within the window, at least as high as the
// newest sample, and no higher than anything the window holds.
func TestMaxFilterWindowedMax(t *testing.T) {
	const win = 10
	rng := rand.New(rand.NewPCG(1, 2))
	type sample struct {
		t uint64
		v float64
	}
	var m maxFilter
	var all []sample
	var now uint64
	for i := 0; i < 20000; i++ {
		now += uint64(rng.IntN(3)) // 0, 1 or 2 rounds later
		v := rng.Float64() * 100
		if i%500 == 0 {
			v = 1000 // a burst the window must forget
		}
		if len(all) == 0 {
			m.reset(now, v)
		} else {
			m.update(win, now, v)
		}
		all = append(all, sample{now, v})
		got := m.get()
		found := false
		var inWin float64
		for j := len(all) - 1; j >= 0 && now-all[j].t <= win; j-- {
			found = found || all[j].v == got
			inWin = max(inWin, all[j].v)
		}
		if !found || got < v || got > inWin {
			t.Fatalf("sample %d (%v) at round %d: filter says %v, not a sample of the last %d rounds at least the newest (their max %v)",
				i, v, now, got, win, inWin)
		}
	}
}

// TestMaxFilterForgetsBurst: one high sample is forgotten once the
// window has passed it, and a later higher sample replaces everything.
func TestMaxFilterForgetsBurst(t *testing.T) {
	var m maxFilter
	m.reset(0, 5)
	m.update(10, 1, 100)
	for r := uint64(2); r <= 11; r++ {
		m.update(10, r, 7)
		if got := m.get(); got != 100 {
			t.Fatalf("round %d: %v, want the burst's 100 still in the window", r, got)
		}
	}
	for r := uint64(12); r <= 30; r++ {
		m.update(10, r, 7)
	}
	if got := m.get(); got != 7 {
		t.Fatalf("after the window: %v, want 7", got)
	}
	m.update(10, 31, 9)
	if got := m.get(); got != 9 {
		t.Fatalf("new maximum: %v, want 9", got)
	}
}

// TestBBRWindowModel checks the window the model gives: the
// bandwidth-delay product at the gain, and the send quantum Linux's
// tcp_tso_autosize gives (a millisecond at the estimated rate, between 2
// packets and a 64 KiB GSO segment).
func TestBBRWindowModel(t *testing.T) {
	s := &sender{}
	s.MaxPayloadSize = 1448
	b := newBBRCC(s)
	if got := b.bdp(1e6, 2); got != InitialCwnd {
		t.Errorf("bdp with no RTT sample: %d, want the initial window %d", got, InitialCwnd)
	}
	b.minRTT = 100 * time.Microsecond
	// 200,000 packets/s over 100 µs is 20 packets; gain 2 makes 40.
	if got := b.bdp(200_000, 2); got != 40 {
		t.Errorf("bdp(200k pkt/s, 100µs, gain 2) = %d, want 40", got)
	}
	// A fraction of a packet rounds up.
	if got := b.bdp(15_000, 1); got != 2 {
		t.Errorf("bdp(15k pkt/s, 100µs, gain 1) = %d, want 2", got)
	}
	for _, tc := range []struct {
		bw   float64
		want int
	}{{0, 2}, {1000, 2}, {20_000, 20}, {1e6, 65536 / 1448}} {
		if got := b.quantum(tc.bw); got != tc.want {
			t.Errorf("quantum(%v pkt/s) = %d, want %d", tc.bw, got, tc.want)
		}
	}
}
