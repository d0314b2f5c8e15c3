//go:build !race

package perftest

// RaceEnabled: the race detector is off (see race.go).
const RaceEnabled = false
