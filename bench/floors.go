//go:build linux

package main

import (
	"fmt"
	"io"
)

// A floor is raw AF_XDP code that answers the same client with the least
// work the platform allows, so no stack over AF_XDP can beat it: a
// contender's median beyond its floor's means the floor measured
// something other than what it bounds (a different client, a slower
// loop, a noisy moment), not that the stack won. The report then says
// "floor beaten" with both figures, never a ratio that reads as a win,
// and marks the run's targets unmeasured.

// floorCheck is one median of a contender set against its floor's.
type floorCheck struct {
	Contender, Floor, Workload string
	Size                       int
	Got, Bound                 float64 // the contender's figure and the floor's
	Unit                       string
	// LowerIsBetter: a round trip (the floor is a lower bound), not a
	// rate or a throughput (an upper bound).
	LowerIsBetter bool
}

// Beaten reports whether the contender did better than its floor.
func (f floorCheck) Beaten() bool {
	if f.LowerIsBetter {
		return f.Got < f.Bound
	}
	return f.Got > f.Bound
}

func (f floorCheck) String() string {
	what := f.Workload
	if f.Workload == "pingpong" {
		what = fmt.Sprintf("pingpong %dB p50", f.Size)
	}
	return fmt.Sprintf("%s %s: %.2f %s, its floor %s %.2f %s", f.Contender, what, f.Got, f.Unit, f.Floor, f.Bound, f.Unit)
}

// boundedByFloor reports whether a contender's figures are bounded by a
// floor: every contender whose server or client is AF_XDP code with a
// stack on it (ustack, gvisor-xdp). The floors bound neither the kernel's
// own stack nor each other.
func boundedByFloor(c contender) bool {
	return c.Server == "ustack" || c.Server == "gvisor-xdp"
}

// floorChecks sets every bounded contender's medians against their floors
// in this run, where both were measured.
func (r *report) floorChecks() []floorCheck {
	var out []floorCheck
	for i := range r.Medians {
		x := &r.Medians[i]
		c := contenderNamed(x.Contender)
		if c == nil || !boundedByFloor(*c) || x.Error != "" {
			continue
		}
		f := r.floorResult(*c, x)
		if f == nil {
			continue
		}
		fc := floorCheck{Contender: x.Contender, Floor: f.Contender, Workload: x.Workload, Size: x.Size}
		switch {
		case x.Workload == "pingpong" && x.RTT != nil && f.RTT != nil:
			fc.Got, fc.Bound, fc.Unit, fc.LowerIsBetter = x.RTT.P50, f.RTT.P50, "µs", true
		case x.Workload == "rate" && x.ReqPerSec > 0 && f.ReqPerSec > 0:
			fc.Got, fc.Bound, fc.Unit = x.ReqPerSec, f.ReqPerSec, "requests/s"
		case throughput(x.Workload) && x.Gbps > 0 && f.Gbps > 0:
			fc.Got, fc.Bound, fc.Unit = x.Gbps, f.Gbps, "Gbit/s"
		default:
			continue
		}
		out = append(out, fc)
	}
	return out
}

// floorResult returns the median x is set against: its workload's (and,
// for a ping-pong, size's) median of the first of its floors measured in
// this run (floorOf), or nil.
func (r *report) floorResult(c contender, x *result) *result {
	size := 0
	if x.Workload == "pingpong" {
		size = x.Size
	}
	for _, name := range floorOf(c, x.Workload) {
		if f := r.find(name, x.Workload, size); f != nil {
			return f
		}
	}
	return nil
}

// beatenFloors lists the checks a contender won: measurement bugs.
func (r *report) beatenFloors() []floorCheck {
	var out []floorCheck
	for _, f := range r.floorChecks() {
		if f.Beaten() {
			out = append(out, f)
		}
	}
	return out
}

// floorBeaten reports whether x's median beat its floor in this run.
func (r *report) floorBeaten(x *result) bool {
	for _, f := range r.beatenFloors() {
		if f.Contender == x.Contender && f.Workload == x.Workload && (f.Workload != "pingpong" || f.Size == x.Size) {
			return true
		}
	}
	return false
}

// printBeatenFloors says which floors a contender beat, if any.
func (r *report) printBeatenFloors(w io.Writer) {
	b := r.beatenFloors()
	if len(b) == 0 {
		return
	}
	fmt.Fprintf(w, "\nfloor beaten: a floor no stack can beat was beaten %d times in this run, so the floors did not measure what they bound; the targets below are unmeasured:\n", len(b))
	for _, f := range b {
		fmt.Fprintf(w, "  floor beaten: %s\n", f)
	}
}

// floorCell is a contender's ratio to its floor for a table, or "floor
// beaten" where it beat it.
func (r *report) floorCell(x *result, q func(*rttQuantiles) float64) string {
	if r.floorBeaten(x) {
		return "floor beaten"
	}
	return r.floorRatio(x, q)
}

// rateFloorCell is a rate median's ratio to its floor's, or "floor
// beaten".
func (r *report) rateFloorCell(x *result) string {
	if r.floorBeaten(x) {
		return "floor beaten"
	}
	c := contenderNamed(x.Contender)
	if c == nil {
		return "-"
	}
	f := r.floorResult(*c, x)
	if f == nil || f == x {
		return "-"
	}
	return ratio(x.ReqPerSec, f.ReqPerSec)
}

// coreLegend says how the capacity columns are measured.
const coreLegend = "a ustack server: " + coreWorkers + "; a kernel server: " + coreCPUs + "; floors: not measured"

// coreUs formats a median's server CPU per request in µs.
func coreUs(x *result) string {
	if x.ServerCoreUsPerReq <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", x.ServerCoreUsPerReq)
}

// corePerSec formats the requests (or connections) one server core
// serves a second at that cost.
func corePerSec(x *result) string {
	if x.ServerCoreUsPerReq <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", 1e6/x.ServerCoreUsPerReq)
}
