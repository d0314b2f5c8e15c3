package vethtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Privileged skips t unless it runs as root, except under CI (the CI
// environment variable set to a true value: true, 1, yes, on, in any
// case), where a privileged test that would skip fails instead: CI must
// run them.
func Privileged(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if ci := os.Getenv("CI"); isTrue(ci) {
		t.Fatalf("privileged test would skip under CI=%s: needs root (euid %d)", ci, os.Geteuid())
	}
	t.Skipf("needs root (euid %d)", os.Geteuid())
}

// isTrue reports whether an environment value means true, as CI systems
// set it: anything strconv.ParseBool takes as true, or yes or on.
func isTrue(v string) bool {
	v = strings.TrimSpace(v)
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	switch strings.ToLower(v) {
	case "yes", "y", "on":
		return true
	}
	return false
}

// Tools checks that the named commands are on PATH, as some privileged
// tests need them (nft, ethtool). A missing one skips the test, or fails
// it under CI, which must install them.
func Tools(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if ci := os.Getenv("CI"); isTrue(ci) {
				t.Fatalf("test would skip under CI=%s: %s is not installed", ci, n)
			}
			t.Skipf("needs %s (Debian: apt-get install %s)", n, debianPackage(n))
		}
	}
}

func debianPackage(cmd string) string {
	if cmd == "nft" {
		return "nftables"
	}
	return cmd
}
