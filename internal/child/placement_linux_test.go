package child

import (
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestTwoHostsOf(t *testing.T) {
	if _, err := TwoHostsOf([]int{3}); err == nil {
		t.Error("two-hosts placement on 1 CPU accepted")
	}
	p, err := TwoHostsOf([]int{0, 1, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.CPUsOf(RoleServer), []int{5}) || !slices.Equal(p.CPUsOf(RoleClient), []int{0, 1, 2}) {
		t.Errorf("CPUs 0,1,2,5: servers on %v, clients on %v", p.Server, p.Client)
	}
	if got, want := p.String(), "two hosts: servers on CPU 5, clients on CPU 0,1,2"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if p.Name() != TwoHosts {
		t.Errorf("Name() = %q", p.Name())
	}
	var none Placement
	if none.CPUsOf(RoleServer) != nil || none.Pinned() || none.Name() != Shared || !strings.HasPrefix(none.String(), "shared: ") {
		t.Errorf("the shared placement pins something or misnames itself: %q", none.String())
	}
	own, err := OwnCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != runtime.NumCPU() {
		t.Errorf("OwnCPUs %v, runtime.NumCPU %d", own, runtime.NumCPU())
	}
}

// TestStartOnPinsTheChild: a child started by startOn may run only on the
// CPUs given, whatever its parent may use.
func TestStartOnPinsTheChild(t *testing.T) {
	own, err := OwnCPUs()
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
	if got, want := strings.Join(strings.Fields(out.String()), " "), "Cpus_allowed_list: "+List([]int{cpu}); got != want {
		t.Errorf("child's %q, want %q", got, want)
	}
	if err := startOn(exec.Command("true"), nil); err == nil {
		t.Error("startOn with no CPUs started")
	}
}
