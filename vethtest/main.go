package vethtest

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Main runs a package's tests like testing.M.Run and then fails the run if
// they leaked: namespaces created through this package and not deleted,
// BPF programs, maps or links still open, goroutines left running, or any
// failure reported by the package's own checks (such as open AF_XDP
// sockets). Use it from TestMain: os.Exit(vethtest.Main(m, checks...)).
func Main(m *testing.M, checks ...func() error) int {
	goroutines := runtime.NumGoroutine()
	bpfFDs := countBPFFDs()
	code := m.Run()
	if code != 0 {
		return code
	}
	var problems []string
	if ns := Live(); len(ns) > 0 {
		problems = append(problems, fmt.Sprintf("namespaces not deleted: %v", ns))
	}
	// Goroutines and descriptors wind down asynchronously (netstack
	// timers, finalizers): give them a moment.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && (runtime.NumGoroutine() > goroutines || countBPFFDs() > bpfFDs) {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
	if n := countBPFFDs(); n > bpfFDs {
		problems = append(problems, fmt.Sprintf("BPF program/map/link descriptors leaked: %d before, %d after", bpfFDs, n))
	}
	// The fuzzing engine keeps goroutines of its own (os/signal).
	fuzzing := flag.Lookup("test.fuzz") != nil && flag.Lookup("test.fuzz").Value.String() != ""
	if n := runtime.NumGoroutine(); n > goroutines && !fuzzing {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		problems = append(problems, fmt.Sprintf("goroutines leaked: %d before, %d after:\n%s", goroutines, n, buf))
	}
	for _, c := range checks {
		if err := c(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: leak check:\n  %s\n", strings.Join(problems, "\n  "))
		return 1
	}
	return 0
}

// countBPFFDs counts this process's descriptors for BPF objects.
func countBPFFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(target, "anon_inode:bpf") {
			n++
		}
	}
	return n
}
