//go:build !linux

package link

func pinToCPU(int) {}

func osYieldNow() {}
