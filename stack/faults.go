package stack

import (
	"errors"
	"fmt"
	"time"

	"github.com/ustack-dev/ustack/stack/internal/faultio"
)

// Faults configures seeded fault injection in ustack's link layer, for
// testing applications (and ustack) against a bad network: each frame
// crossing the wire in a direction is, independently, dropped,
// corrupted, duplicated, reordered or delayed with the probabilities
// given. The same Seed, configuration and traffic give the same
// decisions. Faults sit between netstack and the AF_XDP socket (or the
// memory wire), under a packet capture if one is configured: a capture
// shows frames as sent before TX faults and as received after RX faults.
// The injector is package faultio's (stack/internal/faultio).
type Faults struct {
	// Seed seeds the decisions (each queue and direction draws from its
	// own generator derived from it).
	Seed uint64
	// RX applies to frames received from the wire, TX to frames sent.
	RX, TX FaultRates
}

// FaultRates are the probabilities, each in [0, 1], that a frame is
// subjected to each fault. At most one fault applies to a frame; the
// draws are made in the order of the fields.
type FaultRates struct {
	// Drop discards the frame.
	Drop float64
	// Corrupt flips one bit of an IPv4 or IPv6 frame's network-layer
	// bytes (the Ethernet header is left alone: on a real link the frame
	// check sequence catches damage there). The IPv4 header, TCP, UDP and
	// ICMP checksums must catch it; the frame is still delivered.
	Corrupt float64
	// Duplicate delivers the frame twice, back to back.
	Duplicate float64
	// Reorder holds the frame back until the next frame has gone ahead
	// of it (or ReorderTimeout passes).
	Reorder float64
	// Delay holds the frame back for DelayTime.
	Delay float64
	// DelayTime is how long a delayed frame is held (default 1ms).
	DelayTime time.Duration
}

// validate reports rates that are not probabilities, or a delay out of
// range, as ErrConfig.
func (r FaultRates) validate(dir string) error {
	if err := faultio.Rates(r).Validate(dir); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// ReorderTimeout is the longest a reordered frame waits for a frame to
// overtake it.
const ReorderTimeout = 2 * time.Millisecond

// FaultStats count the faults applied in one direction.
type FaultStats struct {
	Dropped, Corrupted, Duplicated, Reordered, Delayed uint64
	// Skipped counts faults drawn but not applied for want of a spare
	// frame (a duplicate, or a held RX frame's copy).
	Skipped uint64
}

// ErrNoFaults is returned by SetFaults on a stack configured without
// Config.Faults.
var ErrNoFaults = errors.New("stack has no fault injector (configured without Faults)")
