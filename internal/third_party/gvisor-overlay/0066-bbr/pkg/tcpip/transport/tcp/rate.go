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

// ustack: delivery-rate sampling for BBR, after Linux's
// net/ipv4/tcp_rate.c and draft-cheng-iccrg-delivery-rate-estimation.
// Every transmission stamps its segment with the connection's delivery
// state; every ACK that delivers segments (cumulatively or by SACK) turns
// the stamp of the most recently sent of them into one rate sample: the
// packets delivered since that segment was sent, over the longer of its
// send and ACK intervals.

import (
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// rateStamp is the connection's delivery state when a segment was
// (last) sent.
type rateStamp struct {
	delivered     uint64
	deliveredTime tcpip.MonotonicTime
	firstSentTime tcpip.MonotonicTime
	appLimited    bool
}

// rateSample is what one ACK says about the delivery rate.
type rateSample struct {
	// priorDelivered and priorTime are the delivery state stamped on
	// the most recently sent segment this ACK delivered.
	priorDelivered uint64
	priorTime      tcpip.MonotonicTime
	// newestXmit is that segment's transmit time.
	newestXmit tcpip.MonotonicTime
	// sendElapsed is how long the flight that segment closed took to
	// send.
	sendElapsed time.Duration
	// delivered is the packets delivered over interval; -1 when this
	// ACK gives no sample.
	delivered int64
	interval  time.Duration
	// ackedSacked is the packets this ACK newly delivered.
	ackedSacked int
	// losses is the packets this ACK's processing marked lost.
	losses int
	// rtt is the round trip of the most recently sent segment this ACK
	// delivered that was sent only once, or -1.
	rtt          time.Duration
	isAppLimited bool
}

// rateState is the sender's side of rate sampling.
type rateState struct {
	// delivered counts the packets delivered so far.
	delivered     uint64
	deliveredTime tcpip.MonotonicTime
	// firstSentTime is the send time of the segment that began the
	// current flight.
	firstSentTime tcpip.MonotonicTime
	// appLimitedUntil is the delivered count before which samples are
	// application-limited; 0 if they are not.
	appLimitedUntil uint64
	// rs is the sample the ACK being processed builds.
	rs rateSample
}

// rateSent stamps seg, about to be sent at now.
//
// +checklocks:s.ep.mu
func (s *sender) rateSent(seg *segment, now tcpip.MonotonicTime) {
	r := &s.rate
	if s.SndUna == s.SndNxt {
		// Nothing in flight: a new flight starts, and the idle time
		// before it is not part of any interval.
		r.firstSentTime = now
		r.deliveredTime = now
		if r.appLimitedUntil != 0 {
			// Restarting from idle (Linux's CA_EVENT_TX_START).
			s.bbr.idleRestart = true
		}
	}
	seg.rate = rateStamp{
		delivered:     r.delivered,
		deliveredTime: r.deliveredTime,
		firstSentTime: r.firstSentTime,
		appLimited:    r.appLimitedUntil != 0,
	}
}

// rateStartAck begins the sample of the ACK about to be processed.
func (s *sender) rateStartAck() {
	s.rate.rs = rateSample{delivered: -1, rtt: -1}
}

// rateDelivered records that pkts packets of seg were delivered by the
// ACK that arrived at now.
//
// +checklocks:s.ep.mu
func (s *sender) rateDelivered(seg *segment, pkts int, now tcpip.MonotonicTime) {
	if seg.rate.deliveredTime == (tcpip.MonotonicTime{}) {
		return // never stamped: not sent while sampling
	}
	r := &s.rate
	rs := &r.rs
	r.delivered += uint64(pkts)
	r.deliveredTime = now
	rs.ackedSacked += pkts
	if rs.priorTime == (tcpip.MonotonicTime{}) || rs.newestXmit.Before(seg.xmitTime) {
		rs.priorDelivered = seg.rate.delivered
		rs.priorTime = seg.rate.deliveredTime
		rs.isAppLimited = seg.rate.appLimited
		rs.newestXmit = seg.xmitTime
		rs.sendElapsed = seg.xmitTime.Sub(seg.rate.firstSentTime)
		// The next sample's send phase starts from this segment.
		r.firstSentTime = seg.xmitTime
		if seg.xmitCount == 1 {
			rs.rtt = now.Sub(seg.xmitTime)
		} else {
			rs.rtt = -1
		}
	}
}

// rateFinishAck completes the ACK's sample; minRTT (0 if unknown) bounds
// the shortest interval believed.
//
// +checklocks:s.ep.mu
func (s *sender) rateFinishAck(minRTT time.Duration) *rateSample {
	r := &s.rate
	rs := &r.rs
	if r.appLimitedUntil != 0 && r.delivered > r.appLimitedUntil {
		r.appLimitedUntil = 0
	}
	if rs.priorTime == (tcpip.MonotonicTime{}) {
		return rs
	}
	rs.delivered = int64(r.delivered - rs.priorDelivered)
	rs.interval = max(rs.sendElapsed, r.deliveredTime.Sub(rs.priorTime))
	// An interval shorter than the path's round trip means ACKs were
	// compressed or stretched: the rate it gives is not real (Linux's
	// tcp_rate_gen).
	if rs.interval <= 0 || rs.interval < minRTT {
		rs.delivered = -1
	}
	return rs
}

// rateCheckAppLimited marks the samples to come as application-limited
// when the sender has nothing left to send though the window would let
// it (Linux's tcp_rate_check_app_limited).
//
// +checklocks:s.ep.mu
func (s *sender) rateCheckAppLimited() {
	if s.writeNext == nil && s.Outstanding < s.SndCwnd && !s.FastRecovery.Active {
		s.rate.appLimitedUntil = max(s.rate.delivered+uint64(s.Outstanding), 1)
	}
}
