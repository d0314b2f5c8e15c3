package child

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Placement pins children to CPUs by role. The zero value (Shared) pins
// nothing: the scheduler places every process.
//
// On a small VM where the scheduler is free to place them, a client and a
// kernel server that sleep and wake each other settle on one vCPU and
// pass each request without an inter-processor wake-up, which two
// machines never can; a polling server keeps its own vCPU busy and so
// never shares the client's. The two-hosts placement gives each side
// CPUs of its own, as two machines have: it is the placement of record.
type Placement struct {
	// Server and Client are the CPUs of the server and client roles; both
	// nil for the scheduler's placement.
	Server, Client []int
}

// Names of the two placements, as reports and results.json give them.
const (
	TwoHosts = "two-hosts"
	Shared   = "shared"
)

// ErrOneCPU reports a two-hosts placement asked for on a process that may
// use a single CPU.
var ErrOneCPU = errors.New("the two-hosts placement needs at least 2 CPUs")

// TwoHostsOf puts servers on the last of cpus and clients on the rest.
func TwoHostsOf(cpus []int) (Placement, error) {
	if len(cpus) < 2 {
		return Placement{}, fmt.Errorf("%w, this process may use %d (CPU %s)", ErrOneCPU, len(cpus), List(cpus))
	}
	n := len(cpus)
	return Placement{Server: cpus[n-1:], Client: cpus[:n-1]}, nil
}

// OwnTwoHosts is TwoHostsOf over the CPUs this process may use.
func OwnTwoHosts() (Placement, error) {
	cpus, err := OwnCPUs()
	if err != nil {
		return Placement{}, err
	}
	return TwoHostsOf(cpus)
}

// OwnCPUs lists the CPUs this process may run on, in order.
func OwnCPUs() ([]int, error) {
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

// Pinned reports whether the placement pins anything.
func (p Placement) Pinned() bool { return len(p.Server) > 0 || len(p.Client) > 0 }

// Name is TwoHosts or Shared.
func (p Placement) Name() string {
	if p.Pinned() {
		return TwoHosts
	}
	return Shared
}

// CPUsOf returns the CPUs for a child of a role (RoleServer or
// RoleClient), nil for no pinning.
func (p Placement) CPUsOf(role Role) []int {
	if role == RoleServer {
		return p.Server
	}
	return p.Client
}

// String describes the placement in a sentence's words, as reports print
// it.
func (p Placement) String() string {
	if !p.Pinned() {
		return "shared: the scheduler places servers and clients, and a client may share a CPU with its server"
	}
	return fmt.Sprintf("two hosts: servers on CPU %s, clients on CPU %s", List(p.Server), List(p.Client))
}

// List formats CPUs as a comma-separated list.
func List(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// startOn starts cmd with its CPU affinity set to cpus: the calling
// thread's mask is set first, and the child inherits it, so its Go
// runtime sizes GOMAXPROCS to it (unless the environment sets
// GOMAXPROCS). The caller must be on a locked OS thread that it does not
// use afterwards (vethtest's Host.Do).
func startOn(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return errors.New("no CPUs to start on")
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPU %s: %w", List(cpus), err)
	}
	return cmd.Start()
}
