//go:build !linux

package fastflow

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
