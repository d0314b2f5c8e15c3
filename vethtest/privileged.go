package vethtest

import (
	"os"
	"testing"
)

// Privileged skips t unless it runs as root, except under CI=true, where a
// privileged test that would skip fails instead: CI must run them.
func Privileged(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("privileged test would skip under CI=true: needs root (euid %d)", os.Geteuid())
	}
	t.Skipf("needs root (euid %d)", os.Geteuid())
}
