//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// placement pins the benchmark's children to CPUs (-split). On a small VM
// where the scheduler is free to place them, a client and a kernel server
// that sleep and wake each other settle on one vCPU and pass each request
// without an inter-processor wake-up, which two machines never can; a
// polling server keeps its own vCPU busy and so never shares the
// client's. Split placement gives each side CPUs of its own, as two hosts
// have.
type placement struct {
	server, client []int
}

// splitPlacement puts servers on the last of cpus and clients on the
// rest.
func splitPlacement(cpus []int) (placement, error) {
	if len(cpus) < 2 {
		return placement{}, fmt.Errorf("needs at least 2 CPUs, this process may use %d", len(cpus))
	}
	n := len(cpus)
	return placement{server: cpus[n-1:], client: cpus[:n-1]}, nil
}

// ownCPUs lists the CPUs this process may run on, in order.
func ownCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// cpusOf returns the CPUs for a child of role ("serve" or "client"), nil
// for no pinning.
func (p *placement) cpusOf(role string) []int {
	if p == nil {
		return nil
	}
	if role == "serve" {
		return p.server
	}
	return p.client
}

// String describes the placement for the report.
func (p *placement) String() string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("servers on CPU %s, clients on CPU %s", cpuList(p.server), cpuList(p.client))
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// startOn starts cmd with its CPU affinity set to cpus: the calling
// thread's mask is set first, and the child inherits it, so its Go runtime
// sizes GOMAXPROCS to it (unless the environment sets GOMAXPROCS). The
// caller must be on a locked OS thread that it does not use afterwards
// (vethtest's Host.Do).
func startOn(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return errors.New("no CPUs to start on")
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPU %s: %w", cpuList(cpus), err)
	}
	return cmd.Start()
}

// cpusAllowed returns the CPU list a process may run on, as
// /proc/<pid>/status gives it ("0-1"), or "" if it cannot be read.
func cpusAllowed(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
