package child

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ustack-dev/ustack/vethtest"
	"golang.org/x/sys/unix"
)

// Role is what a child does: serve or drive a workload.
type Role string

// The two roles. Start names the role in an environment variable of the
// caller's choosing, which the program's main reads first thing.
const (
	RoleServer Role = "serve"
	RoleClient Role = "client"
)

// Child is a running server or client process.
type Child struct {
	Cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	// stderr collects what the child wrote there, for error messages.
	stderr lockedBuffer
	done   chan error
}

// Start runs exe with args as a child of role in host's namespace, on the
// CPUs pl gives the role, with env added to this process's environment
// (roleVar=role among it).
func Start(exe string, host *vethtest.Host, pl Placement, roleVar string, role Role, env []string, args ...string) (*Child, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), roleVar+"="+string(role)), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ch := &Child{Cmd: cmd, stdin: in, stdout: bufio.NewReader(out), done: make(chan error, 1)}
	cmd.Stderr = &ch.stderr
	// Forked from a thread inside the namespace, the child lives there
	// (and on the thread's CPUs).
	start := cmd.Start
	if cpus := pl.CPUsOf(role); cpus != nil {
		start = func() error { return startOn(cmd, cpus) }
	}
	if err := host.Do(start); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	return ch, nil
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// Send writes one line to the child's stdin.
func (c *Child) Send(line string) error {
	_, err := fmt.Fprintln(c.stdin, line)
	return err
}

// ReadLine reads the child's next line within d; on timeout it kills the
// child.
func (c *Child) ReadLine(d time.Duration) (string, error) {
	type lr struct {
		s   string
		err error
	}
	ch := make(chan lr, 1)
	go func() {
		s, err := c.stdout.ReadString('\n')
		ch <- lr{strings.TrimSpace(s), err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			return r.s, fmt.Errorf("%w (stderr: %s)", r.err, c.Stderr())
		}
		return r.s, nil
	case <-t.C:
		c.Cmd.Process.Kill()
		return "", fmt.Errorf("no answer in %v (stderr: %s)", d, c.Stderr())
	}
}

// Stderr returns what the child wrote to its stderr so far, trimmed.
func (c *Child) Stderr() string { return strings.TrimSpace(c.stderr.String()) }

// Stop closes the child's stdin and waits up to 10s for it to exit
// before killing it.
func (c *Child) Stop() error {
	c.stdin.Close()
	go func() { c.done <- c.Cmd.Wait() }()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case err := <-c.done:
		if err != nil {
			return fmt.Errorf("%w (stderr: %s)", err, c.Stderr())
		}
		return nil
	case <-t.C:
		c.Cmd.Process.Kill()
		<-c.done
		return errors.New("did not exit within 10s; killed")
	}
}

// lockedBuffer is a bytes.Buffer the child's stderr copier writes while
// the parent reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// CPUSeconds returns a process's user+system CPU time.
func CPUSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// RSSBytes returns a process's resident set size.
func RSSBytes(pid int) float64 {
	return kbField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
}

// SlabBytes returns the kernel's slab memory, machine-wide (/proc/meminfo
// Slab: reclaimable and not), where its sockets, their inodes, files and
// epoll entries live; 0 if it cannot be read.
func SlabBytes() float64 { return kbField("/proc/meminfo", "Slab:") }

// CPUsAllowed returns the CPU list a process may run on, as
// /proc/<pid>/status gives it ("0-1"), or "" if it cannot be read.
func CPUsAllowed(pid int) string {
	v, _ := fileField(fmt.Sprintf("/proc/%d/status", pid), "Cpus_allowed_list:")
	return strings.TrimSpace(v)
}

// kbField is the "name: N kB" line of a /proc file in bytes; 0 if it
// cannot be read.
func kbField(path, name string) float64 {
	if v, ok := fileField(path, name); ok {
		if f := strings.Fields(v); len(f) >= 1 {
			kb, _ := strconv.ParseFloat(f[0], 64)
			return kb * 1024
		}
	}
	return 0
}

// fileField is what follows name on the line of the file at path that
// starts with it.
func fileField(path, name string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			return v, true
		}
	}
	return "", false
}

// Exclusive takes a machine-wide lock (a file lock in the temporary
// directory) that timing-sensitive runs share, and returns its release.
// go test runs packages in parallel: two benchmark runs at once on a small
// machine skew each other's figures several-fold, and a test that compares
// figures must not run beside another that measures them.
func Exclusive() (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "ustack-timing.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("timing lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("timing lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// CPUBusySeconds returns the time the CPUs in list (a Cpus_allowed_list:
// "1", "0-1", "0,2-3") spent on anything but idle since boot, from
// /proc/stat: user, nice, system, irq, softirq and steal time, whoever
// ran there (the softirq work the network does included). NaN if list
// or /proc/stat cannot be read.
func CPUBusySeconds(list string) float64 {
	cpus, ok := parseCPUList(list)
	if !ok {
		return math.NaN()
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return math.NaN()
	}
	total, found := 0.0, 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || !cpus[n] {
			continue
		}
		found++
		// user nice system idle iowait irq softirq steal
		for _, i := range []int{1, 2, 3, 6, 7, 8} {
			v, _ := strconv.ParseFloat(f[i], 64)
			total += v
		}
	}
	if found != len(cpus) {
		return math.NaN()
	}
	return total / 100 // USER_HZ
}

// CountCPUs is how many CPUs list (a Cpus_allowed_list) names; 0 if it
// cannot be parsed.
func CountCPUs(list string) int {
	cpus, _ := parseCPUList(list)
	return len(cpus)
}

// parseCPUList parses a CPU list as /proc prints it.
func parseCPUList(list string) (map[int]bool, bool) {
	cpus := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(list), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, false
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil || z < a {
				return nil, false
			}
		}
		for c := a; c <= z; c++ {
			cpus[c] = true
		}
	}
	return cpus, len(cpus) > 0
}
