package stack

import (
	"github.com/ustack-dev/ustack/stack/internal/faultio"
	"github.com/ustack-dev/ustack/stack/internal/pcapio"
	"github.com/ustack-dev/ustack/stack/internal/sgio"
)

// middleware is what Config adds between a queue's socket (or wire) and
// the stack. Each layer is a package of its own that wraps a frame I/O
// as gVisor's link/sniffer wraps a link endpoint; the worker and the TX
// path drive the chain through frameIO alone, and stats and Close reach
// every layer through its ReadStats and Close.
type middleware struct {
	// faults are the fault injectors, one per queue (nil without
	// Config.Faults), for SetFaults.
	faults []*faultio.IO
}

// wrapIO builds each queue's chain over ios, innermost first: on a link
// with multi-buffer frames the layer that joins their chains (so every
// layer above sees whole frames), then faults, then the capture above
// them, so a capture shows frames as netstack sent them and as the worker
// received them.
func wrapIO(ios []frameIO, cfg *Config, li linkInfo) ([]frameIO, middleware, error) {
	var mw middleware
	var capture *pcapio.Writer
	if c := cfg.Capture; c != nil {
		var err error
		if capture, err = pcapio.NewWriter(pcapio.Config(*c)); err != nil {
			return nil, mw, err
		}
	}
	out := make([]frameIO, len(ios))
	for i, io := range ios {
		if li.multiBuffer {
			sg, err := sgio.New(io, int(cfg.FrameSize), int(li.mtu)+ethHeaderLen)
			if err != nil {
				return nil, mw, err
			}
			io = sg
		}
		if f := cfg.Faults; f != nil {
			fio := faultio.New(io, faultio.Config{Seed: f.Seed, RX: faultio.Rates(f.RX), TX: faultio.Rates(f.TX)}, i)
			mw.faults = append(mw.faults, fio)
			io = fio
		}
		if capture != nil {
			io = capture.Wrap(io)
		}
		out[i] = io
	}
	return out, mw, nil
}
