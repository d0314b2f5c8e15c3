//go:build !race

package perftest

const RaceEnabled = false
