package bpf

import "fmt"

// Counters reads the per-CPU counters and sums them.
func (p *Program) Counters() (Counters, error) {
	var c Counters
	var perCPU []uint64
	for r := Reason(0); r < numReasons; r++ {
		if err := p.objs.Counters.Lookup(uint32(r), &perCPU); err != nil {
			return c, fmt.Errorf("read counter %v: %w", r, err)
		}
		for _, v := range perCPU {
			c[r] += v
		}
	}
	return c, nil
}
