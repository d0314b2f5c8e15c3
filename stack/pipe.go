package stack

import (
	"net"

	"github.com/ustack-dev/ustack/stack/internal/memwire"
)

// NewPipe returns two stacks joined by an in-memory Ethernet wire (MTU
// 1500): no interface, privileges or kernel involved, for testing
// applications, and with Config.Faults a bad network, in ordinary tests.
// Each Config is validated as for New; Interface, Queues, Pin and
// ForceGenericXDP are ignored (one queue each); the stacks' addresses
// should share a prefix. Close both stacks when done.
func NewPipe(a, b Config) (*Stack, *Stack, error) {
	wa, wb, err := memwire.New(1024, 2048)
	if err != nil {
		return nil, nil, err
	}
	var stacks [2]*Stack
	for i, c := range []struct {
		cfg  Config
		end  *memwire.End
		name string
	}{{a, wa, "pipe0"}, {b, wb, "pipe1"}} {
		cfg := c.cfg
		cfg.Interface, cfg.Queues, cfg.Pin, cfg.ForceGenericXDP = c.name, 1, false, false
		cfg.setDefaults()
		if err := cfg.validate(); err != nil {
			if i == 1 {
				stacks[0].Close()
			}
			return nil, nil, err
		}
		mac := net.HardwareAddr{2, 0, 0, 0, 0xfe, byte(i + 1)}
		s, err := newStack(cfg, []frameIO{c.end}, linkInfo{mtu: 1500, mac: mac}, nil)
		if err != nil {
			if i == 1 {
				stacks[0].Close()
			}
			return nil, nil, err
		}
		stacks[i] = s
	}
	return stacks[0], stacks[1], nil
}
