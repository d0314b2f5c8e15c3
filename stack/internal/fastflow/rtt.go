package fastflow

// RTO bounds in microseconds: netstack's defaults (MinRTO 200 ms, MaxRTO
// 120 s) and RFC 6298 §2.1's initial 1 s.
const (
	minRTO     = 200_000
	maxRTO     = 120_000_000
	initialRTO = 1_000_000
)

// sampleRTT folds one RTT measurement r (microseconds) into SRTT and
// RTTVAR and recomputes the RTO, as RFC 6298 §2.2–2.4 (α = 1/8, β = 1/4,
// K = 4, G = 1 µs).
func (f *Flow) sampleRTT(r uint32) {
	r = min(max(r, 1), maxRTO)
	if f.srtt == 0 {
		f.srtt = r
		f.rttvar = r / 2
	} else {
		d := f.srtt - r
		if r > f.srtt {
			d = r - f.srtt
		}
		f.rttvar = (3*f.rttvar + d) / 4
		f.srtt = (7*f.srtt + r) / 8
	}
	rto := f.srtt + max(1, 4*f.rttvar)
	f.rto = min(max(rto, minRTO), maxRTO)
}

// RTT returns SRTT, RTTVAR and the RTO in microseconds.
func (f *Flow) RTT() (srtt, rttvar, rto uint32) { return f.srtt, f.rttvar, f.rto }
