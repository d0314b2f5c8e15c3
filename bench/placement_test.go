//go:build linux

package main

import (
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestSplitPlacement(t *testing.T) {
	if _, err := splitPlacement([]int{3}); err == nil {
		t.Error("split placement on 1 CPU accepted")
	}
	p, err := splitPlacement([]int{0, 1, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.cpusOf("serve"), []int{5}) || !slices.Equal(p.cpusOf("client"), []int{0, 1, 2}) {
		t.Errorf("CPUs 0,1,2,5: servers on %v, clients on %v", p.server, p.client)
	}
	if got, want := p.String(), "servers on CPU 5, clients on CPU 0,1,2"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	var none *placement
	if none.cpusOf("serve") != nil || none.String() != "" {
		t.Error("no placement pins something")
	}
	own, err := ownCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != runtime.NumCPU() {
		t.Errorf("ownCPUs %v, runtime.NumCPU %d", own, runtime.NumCPU())
	}
	if len(own) >= 2 {
		o, err := parseFlags([]string{"-split"})
		if err != nil {
			t.Fatal(err)
		}
		if o.split == nil || !slices.Equal(o.split.server, own[len(own)-1:]) || !slices.Equal(o.split.client, own[:len(own)-1]) {
			t.Errorf("-split: placement %+v, own CPUs %v", o.split, own)
		}
	}
}

// TestStartOnPinsTheChild: a child started by startOn may run only on the
// CPUs given, whatever its parent may use.
func TestStartOnPinsTheChild(t *testing.T) {
	own, err := ownCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := own[len(own)-1]
	cmd := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status")
	var out strings.Builder
	cmd.Stdout = &out
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread's mask changes and it ends with
		// the goroutine, as on vethtest's Host.Do threads.
		runtime.LockOSThread()
		errc <- startOn(cmd, []int{cpu})
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(strings.Fields(out.String()), " "), "Cpus_allowed_list: "+cpuList([]int{cpu}); got != want {
		t.Errorf("child's %q, want %q", got, want)
	}
	if err := startOn(exec.Command("true"), nil); err == nil {
		t.Error("startOn with no CPUs started")
	}
}
