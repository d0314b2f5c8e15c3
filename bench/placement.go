//go:build linux

package main

import (
	"errors"
	"fmt"
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

// splitPlacement puts servers on the last of n CPUs and clients on the
// rest.
func splitPlacement(n int) (placement, error) {
	if n < 2 {
		return placement{}, fmt.Errorf("needs at least 2 CPUs, this process may use %d", n)
	}
	p := placement{server: []int{n - 1}}
	for i := range n - 1 {
		p.client = append(p.client, i)
	}
	return p, nil
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
