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

// ustack: BBR congestion control (version 1), after Linux's
// net/ipv4/tcp_bbr.c and draft-cardwell-iccrg-bbr-congestion-control-00.
// The window follows a model of the path, the bottleneck bandwidth
// (windowed maximum of delivery-rate samples over ten rounds) times the
// minimum round trip (windowed minimum over ten seconds), rather than
// halving on every loss: random loss that is not congestion leaves the
// window where the model puts it.
//
// What differs from Linux: netstack has no pacer, so BBR here sets only
// the congestion window. The gain cycle's pacing gains (1.25, 0.75, 1, ...)
// and the drain phase's pacing gain have nothing to act on; STARTUP goes
// straight to PROBE_BW, whose window gain of 2 is what Linux's PROBE_BW
// uses too. Loss handling (packet conservation for the first round of
// recovery, the window restored when recovery ends), the ACK aggregation
// allowance, the TSO quantization budget and PROBE_RTT are Linux's.

import (
	"math"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// ccBBR is the congestion control option naming BBR.
const ccBBR = "bbr"

const (
	// bbrHighGain is STARTUP's window gain, 2/ln(2).
	bbrHighGain = 2.885
	// bbrCwndGain is PROBE_BW's window gain.
	bbrCwndGain = 2.0
	// bbrBwRounds is the bandwidth filter's window, in rounds.
	bbrBwRounds = 10
	// bbrMinRTTWindow is the min-RTT filter's window.
	bbrMinRTTWindow = 10 * time.Second
	// bbrProbeRTTTime is how long PROBE_RTT holds the window down.
	bbrProbeRTTTime = 200 * time.Millisecond
	// bbrMinCwnd is the smallest window BBR sets (Linux's
	// bbr_cwnd_min_target).
	bbrMinCwnd = 4
	// bbrFullBwThresh and bbrFullBwRounds: STARTUP ends when the
	// bandwidth has not grown by 25% for three rounds.
	bbrFullBwThresh = 1.25
	bbrFullBwRounds = 3
	// bbrExtraAckedRounds is each half of the ACK aggregation filter's
	// window, in rounds; bbrExtraAckedMax caps the allowance at this
	// much time at the estimated bandwidth.
	bbrExtraAckedRounds = 5
	bbrExtraAckedMax    = 100 * time.Millisecond
	// bbrAckEpochResetThresh restarts an aggregation epoch that has
	// counted this many packets.
	bbrAckEpochResetThresh = 1 << 20
)

type bbrMode uint8

const (
	bbrStartup bbrMode = iota
	bbrProbeBW
	bbrProbeRTT
)

// bbrCAState orders the sender's states as Linux's icsk_ca_state does.
type bbrCAState uint8

const (
	bbrOpen bbrCAState = iota
	bbrRecovery
	bbrLoss
)

// maxFilter is a windowed maximum (Kathleen Nichols' algorithm, as in
// Linux's lib/minmax.c): the best, second best and third best samples
// of the window, each with its time.
type maxFilter struct {
	s [3]struct {
		t uint64
		v float64
	}
}

func (m *maxFilter) get() float64 { return m.s[0].v }

func (m *maxFilter) reset(t uint64, v float64) {
	for i := range m.s {
		m.s[i].t, m.s[i].v = t, v
	}
}

// update adds the sample v taken at t to the filter whose window is win.
func (m *maxFilter) update(win, t uint64, v float64) {
	if v >= m.s[0].v || t-m.s[2].t > win {
		m.reset(t, v)
		return
	}
	val := m.s[0]
	val.t, val.v = t, v
	if v >= m.s[1].v {
		m.s[1], m.s[2] = val, val
	} else if v >= m.s[2].v {
		m.s[2] = val
	}
	dt := t - m.s[0].t
	switch {
	case dt > win:
		// The best sample aged out: the second becomes the best.
		m.s[0], m.s[1], m.s[2] = m.s[1], m.s[2], val
		if t-m.s[0].t > win {
			m.s[0], m.s[1], m.s[2] = m.s[1], m.s[2], val
		}
	case m.s[1].t == m.s[0].t && dt > win/4:
		// A quarter of the window passed with no second choice.
		m.s[1], m.s[2] = val, val
	case m.s[2].t == m.s[1].t && dt > win/2:
		m.s[2] = val
	}
}

// bbrState is BBR's state for one sender.
type bbrState struct {
	s *sender

	mode bbrMode
	// bw is the bottleneck bandwidth filter, in packets per second,
	// timed in rounds.
	bw maxFilter
	// minRTT and its time; 0 is unknown.
	minRTT      time.Duration
	minRTTStamp tcpip.MonotonicTime

	// Round counting: a round ends when a segment sent after the
	// previous round ended is delivered.
	rounds             uint64
	nextRoundDelivered uint64
	roundStart         bool

	// STARTUP's exit: the largest bandwidth seen and the rounds since it
	// last grew by bbrFullBwThresh.
	fullBw        float64
	fullBwCount   int
	fullBwReached bool

	// Loss handling.
	priorCwnd          int
	prevCAState        bbrCAState
	packetConservation bool

	// PROBE_RTT.
	probeRTTDone      tcpip.MonotonicTime
	probeRTTRoundDone bool
	// idleRestart is set when the sender starts a flight after idling
	// application-limited, until a sample delivers data: the first ACKs
	// after a pause refresh an expired min-RTT instead of entering
	// PROBE_RTT (Linux's idle_restart).
	idleRestart bool

	// ACK aggregation: packets acknowledged beyond what the estimated
	// bandwidth explains, windowed over two halves of
	// 2*bbrExtraAckedRounds rounds.
	extraAcked       [2]int
	extraAckedRounds int
	extraAckedIdx    int
	ackEpochStart    tcpip.MonotonicTime
	ackEpochAcked    int
}

func newBBRCC(s *sender) *bbrState {
	return &bbrState{s: s}
}

// caState is the sender's state in Linux's terms.
//
// +checklocks:b.s.ep.mu
func (b *bbrState) caState() bbrCAState {
	switch {
	case b.s.state == tcpip.RTORecovery:
		return bbrLoss
	case b.s.FastRecovery.Active:
		return bbrRecovery
	}
	return bbrOpen
}

// saveCwnd keeps the window to return to after recovery or PROBE_RTT.
//
// +checklocks:b.s.ep.mu
func (b *bbrState) saveCwnd() {
	if b.prevCAState < bbrRecovery && b.mode != bbrProbeRTT {
		b.priorCwnd = b.s.SndCwnd
	} else {
		b.priorCwnd = max(b.priorCwnd, b.s.SndCwnd)
	}
}

// Update implements congestionControl.Update. BBR sets the window on
// every ACK, in recovery too, from onAck.
func (b *bbrState) Update(int, time.Duration, tcpip.MonotonicTime) {}

// HandleLossDetected implements congestionControl.HandleLossDetected:
// the sender is entering recovery. The window is not cut here; the
// first round of recovery conserves packets (onAck).
//
// +checklocks:b.s.ep.mu
func (b *bbrState) HandleLossDetected() {
	b.saveCwnd()
	// enterRecovery sets the window to Ssthresh+3 until onAck sets it.
	b.s.Ssthresh = b.s.SndCwnd
}

// HandleRTOExpired implements congestionControl.HandleRTOExpired.
//
// +checklocks:b.s.ep.mu
func (b *bbrState) HandleRTOExpired() {
	b.saveCwnd()
	b.s.SndCwnd = 1
	b.s.Ssthresh = 1
}

// PostRecovery implements congestionControl.PostRecovery: the window
// the sender had before recovery comes back.
//
// +checklocks:b.s.ep.mu
func (b *bbrState) PostRecovery() {
	b.s.SndCwnd = max(b.s.SndCwnd, b.priorCwnd, bbrMinCwnd)
	b.s.Ssthresh = b.s.SndCwnd
	b.packetConservation = false
	b.prevCAState = bbrOpen
}

// bdp is the window the model gives at gain.
func (b *bbrState) bdp(bw, gain float64) int {
	if b.minRTT == 0 {
		return InitialCwnd
	}
	return int(math.Ceil(bw * b.minRTT.Seconds() * gain))
}

// quantum is how many packets the sender sends at once at bandwidth bw:
// a millisecond's worth, at least 2 and at most a 64 KiB GSO segment
// (Linux's tcp_tso_autosize).
//
// +checklocks:b.s.ep.mu
func (b *bbrState) quantum(bw float64) int {
	most := max(2, 65536/max(b.s.MaxPayloadSize, 1))
	return min(max(int(bw/1000), 2), most)
}

// onAck runs BBR for the ACK the sender just processed, whose arrival
// was now: it updates the model from the ACK's rate sample and sets the
// window.
//
// +checklocks:b.s.ep.mu
func (b *bbrState) onAck(now tcpip.MonotonicTime, losses int) {
	s := b.s
	if s.FastRecovery.Active {
		// The flight in recovery, not counting what was SACKed or
		// lost, as the window is compared with.
		s.SetPipe()
	}
	rs := s.rateFinishAck(b.minRTT)
	rs.losses = losses
	b.updateBw(rs)
	b.updateAckAggregation(rs, now)
	b.checkFullBw(rs)
	b.updateMinRTT(rs, now)
	gain := bbrCwndGain
	if !b.fullBwReached {
		gain = bbrHighGain
	}
	b.setCwnd(rs, gain)
}

// +checklocks:b.s.ep.mu
func (b *bbrState) updateBw(rs *rateSample) {
	b.roundStart = false
	if rs.delivered < 0 || rs.interval <= 0 {
		return
	}
	if rs.priorDelivered >= b.nextRoundDelivered {
		b.nextRoundDelivered = b.s.rate.delivered
		b.rounds++
		b.roundStart = true
		b.packetConservation = false
	}
	bw := float64(rs.delivered) / rs.interval.Seconds()
	// An application-limited sample shows less than the path carries,
	// unless it shows more than the filter holds.
	if !rs.isAppLimited || bw >= b.bw.get() {
		b.bw.update(bbrBwRounds, b.rounds, bw)
	}
}

// +checklocks:b.s.ep.mu
func (b *bbrState) updateAckAggregation(rs *rateSample, now tcpip.MonotonicTime) {
	if rs.ackedSacked <= 0 || rs.delivered < 0 || rs.interval <= 0 {
		return
	}
	if b.roundStart {
		b.extraAckedRounds = min(0x1f, b.extraAckedRounds+1)
		if b.extraAckedRounds >= bbrExtraAckedRounds {
			b.extraAckedRounds = 0
			b.extraAckedIdx ^= 1
			b.extraAcked[b.extraAckedIdx] = 0
		}
	}
	expected := int(b.bw.get() * now.Sub(b.ackEpochStart).Seconds())
	if b.ackEpochAcked <= expected || b.ackEpochAcked+rs.ackedSacked >= bbrAckEpochResetThresh {
		// The ACKs caught up with the bandwidth: a new epoch.
		b.ackEpochAcked = 0
		b.ackEpochStart = now
		expected = 0
	}
	b.ackEpochAcked = min(bbrAckEpochResetThresh-1, b.ackEpochAcked+rs.ackedSacked)
	extra := min(b.ackEpochAcked-expected, b.s.SndCwnd)
	if extra > b.extraAcked[b.extraAckedIdx] {
		b.extraAcked[b.extraAckedIdx] = extra
	}
}

// aggregationCwnd is the window allowance for ACKs that arrive in
// bursts.
func (b *bbrState) aggregationCwnd(bw float64) int {
	if !b.fullBwReached {
		return 0
	}
	return min(max(b.extraAcked[0], b.extraAcked[1]), int(bw*bbrExtraAckedMax.Seconds()))
}

// +checklocks:b.s.ep.mu
func (b *bbrState) checkFullBw(rs *rateSample) {
	if b.fullBwReached || !b.roundStart || rs.isAppLimited {
		return
	}
	if bw := b.bw.get(); bw >= b.fullBw*bbrFullBwThresh {
		b.fullBw = bw
		b.fullBwCount = 0
		return
	}
	b.fullBwCount++
	if b.fullBwCount >= bbrFullBwRounds {
		b.fullBwReached = true
		if b.mode == bbrStartup {
			b.mode = bbrProbeBW
		}
	}
}

// +checklocks:b.s.ep.mu
func (b *bbrState) updateMinRTT(rs *rateSample, now tcpip.MonotonicTime) {
	s := b.s
	expired := b.minRTT != 0 && now.Sub(b.minRTTStamp) > bbrMinRTTWindow
	if rs.rtt >= 0 && (b.minRTT == 0 || rs.rtt < b.minRTT || expired) {
		b.minRTT = max(rs.rtt, time.Microsecond)
		b.minRTTStamp = now
	}
	if expired && !b.idleRestart && b.mode != bbrProbeRTT {
		// Drain the queue for a moment to see the path's own round
		// trip again.
		b.mode = bbrProbeRTT
		b.saveCwnd()
		b.probeRTTDone = tcpip.MonotonicTime{}
	}
	if rs.delivered > 0 {
		b.idleRestart = false
	}
	if b.mode != bbrProbeRTT {
		return
	}
	// What PROBE_RTT sends is application-limited by design.
	s.rate.appLimitedUntil = max(s.rate.delivered+uint64(s.Outstanding), 1)
	if b.probeRTTDone == (tcpip.MonotonicTime{}) {
		if s.Outstanding <= bbrMinCwnd {
			b.probeRTTDone = now.Add(bbrProbeRTTTime)
			b.probeRTTRoundDone = false
			b.nextRoundDelivered = s.rate.delivered
		}
		return
	}
	if b.roundStart {
		b.probeRTTRoundDone = true
	}
	if b.probeRTTRoundDone && now.After(b.probeRTTDone) {
		b.minRTTStamp = now
		s.SndCwnd = max(s.SndCwnd, b.priorCwnd)
		if b.fullBwReached {
			b.mode = bbrProbeBW
		} else {
			b.mode = bbrStartup
		}
	}
}

// setCwnd sets the sender's window for gain (Linux's bbr_set_cwnd).
//
// +checklocks:b.s.ep.mu
func (b *bbrState) setCwnd(rs *rateSample, gain float64) {
	s := b.s
	acked := rs.ackedSacked
	cwnd := s.SndCwnd
	if acked > 0 {
		var done bool
		cwnd, done = b.recoverOrRestore(rs, acked, cwnd)
		if !done {
			bw := b.bw.get()
			target := b.bdp(bw, gain) + b.aggregationCwnd(bw)
			target += 3 * b.quantum(bw)
			target = (target + 1) &^ 1
			if b.fullBwReached {
				cwnd = min(cwnd+acked, target)
			} else if cwnd < target || s.rate.delivered < InitialCwnd {
				cwnd += acked
			}
			cwnd = max(cwnd, bbrMinCwnd)
		}
	}
	if b.mode == bbrProbeRTT {
		cwnd = min(cwnd, bbrMinCwnd)
	}
	s.SndCwnd = max(cwnd, 1)
	// leaveRecovery sets the window to Ssthresh: keep it the window.
	s.Ssthresh = s.SndCwnd
}

// recoverOrRestore applies loss recovery to cwnd: losses come off it,
// the first round of recovery sends one packet per packet delivered, and
// leaving recovery or an RTO restores the window from before. done means
// cwnd is final for this ACK.
//
// +checklocks:b.s.ep.mu
func (b *bbrState) recoverOrRestore(rs *rateSample, acked, cwnd int) (int, bool) {
	s := b.s
	state := b.caState()
	if rs.losses > 0 {
		cwnd = max(cwnd-rs.losses, 1)
	}
	if state == bbrRecovery && b.prevCAState != bbrRecovery {
		// Packet conservation for the first round of recovery.
		b.packetConservation = true
		b.nextRoundDelivered = s.rate.delivered
		cwnd = s.Outstanding + acked
	} else if b.prevCAState >= bbrRecovery && state < bbrRecovery {
		cwnd = max(cwnd, b.priorCwnd)
		b.packetConservation = false
	}
	b.prevCAState = state
	if b.packetConservation {
		return max(cwnd, s.Outstanding+acked), true
	}
	return cwnd, false
}
