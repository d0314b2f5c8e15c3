package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/vethtest"
)

// burstResult is what testdata/burst.py prints.
type burstResult struct {
	Conns, OK, Failed int
	Errors            map[string]int
	Seconds           float64
	CPUSeconds        float64 `json:"cpu_seconds"`
	ConnP50           float64 `json:"conn_p50"`
	ConnP99           float64 `json:"conn_p99"`
	ConnMax           float64 `json:"conn_max"`
	RetransSegs       int     `json:"retrans_segs"`
	SynRetrans        int     `json:"syn_retrans"`
}

// runBurst runs testdata/burst.py in the Kernel host's namespace against
// addr: conns connections opened at once, each echoing 32 bytes.
func runBurst(t *testing.T, p *vethtest.Pair, addr netip.AddrPort, conns int) burstResult {
	t.Helper()
	script, err := filepath.Abs("testdata/burst.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", p.Kernel.Namespace, "python3", script,
		addr.Addr().String(), fmt.Sprint(addr.Port()), fmt.Sprint(conns), "32", "20")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("burst client: %v\n%s", err, errOut.String())
	}
	var r burstResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("burst client output %q: %v", out, err)
	}
	return r
}

// startServer runs ustack-echo server with args in the Ustack host's
// namespace until the test ends, and returns once it is listening. stop
// ends it with SIGTERM and returns what it printed.
func startServer(t *testing.T, p *vethtest.Pair, bin string, args ...string) (cpu func() time.Duration, stop func() string) {
	t.Helper()
	srv := startServerProc(t, p, bin, args...)
	return srv.cpu, srv.stop
}

// serverProc is a running ustack-echo server (startServerProc).
type serverProc struct {
	pid int
	// printed is what it printed up to its "echo server" line.
	printed string
	cpu     func() time.Duration
	stop    func() string
}

// startServerProc is startServer, returning the process's ID and what it
// printed before it listened too.
func startServerProc(t *testing.T, p *vethtest.Pair, bin string, args ...string) *serverProc {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", p.Ustack.Namespace, bin, "server"}, args...)...)
	var out, errOut bytes.Buffer
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	ready, read := make(chan struct{}), make(chan struct{})
	var printed string
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "echo server") && !signalled {
				printed = out.String()
				close(ready)
				signalled = true
			}
		}
	}()
	select {
	case <-ready:
	case <-read:
		cmd.Wait()
		exited = true
		t.Fatalf("server exited:\n%s%s", out.String(), errOut.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not start:\n%s", errOut.String())
	}
	cpu := func() time.Duration {
		d, err := processCPU(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return &serverProc{pid: cmd.Process.Pid, printed: printed, cpu: cpu, stop: func() string {
		cmd.Process.Signal(syscall.SIGTERM)
		<-read
		err := cmd.Wait()
		exited = true
		if err != nil {
			t.Errorf("server: %v\n%s%s", err, out.String(), errOut.String())
		}
		return out.String()
	}}
}

// processCPU returns the user and system CPU time process pid has used.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// burstRun is one server's burst: the client's result, the frames the
// kernel dropped for an empty fill ring (ustack only) and the server
// process's CPU time over the burst.
type burstRun struct {
	burstResult
	ustack bool
	drops  float64
	cpu    time.Duration
}

func (r burstRun) String() string {
	drops := ""
	if r.ustack {
		drops = fmt.Sprintf("%v frames dropped for an empty fill ring; ", r.drops)
	}
	return fmt.Sprintf("%d of %d connected and echoed in %.2f s; %sclient retransmissions %d (SYN %d); server CPU %v, client CPU %.2f s; per connection p50 %.0f ms, p99 %.0f ms, max %.0f ms; errors %v",
		r.OK, r.Conns, r.Seconds, drops, r.RetransSegs, r.SynRetrans, r.cpu, r.CPUSeconds, r.ConnP50*1e3, r.ConnP99*1e3, r.ConnMax*1e3, r.Errors)
}

// TestPrivilegedBurstConnects opens 10,000 connections at once from a
// Python asyncio client on the kernel host, each echoing 32 bytes, against
// `ustack-echo server -handler`, against `ustack-echo server` (net.Conn,
// a goroutine per connection) and against the same command serving with
// the kernel's TCP on the Ustack host, in the same run, and logs for each
// the time, the client's retransmissions (its namespace's TcpRetransSegs),
// the frames the kernel dropped for an empty fill ring (the metrics'
// fill_ring_empty drops), both processes' CPU time and per-connection
// percentiles. Every connection must be served, with SYN cookies on
// demand and always (where the steering program, were it to answer on
// veth, would lose the SYN-ACKs of a client with full checksums, as
// this one has: XDPSynAuto keeps it off there). Fill-ring drops, time and
// retransmissions are logged, not asserted: they depend on how the
// 2-vCPU machine is shared (a CI run of the handler server dropped 7,436
// frames where six runs before had dropped none), and timing belongs in
// benchmarks. The net.Conn server's worker shares one P with the
// connections' goroutines and, after each yield, waits behind every one
// that is runnable.
func TestPrivilegedBurstConnects(t *testing.T) {
	vethtest.Tools(t, "python3", "ip")
	p := vethtest.NewT(t, vethtest.Options{KernelTxChecksumOff: true})
	bin := filepath.Join(t.TempDir(), "ustack-echo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	const conns = 10000
	const metricsAddr = "127.0.0.1:9464"
	dropped := `ustack_rx_dropped_total{queue="0",reason="fill_ring_empty"}`

	// Each run has a port of its own: the clients' connections wait in
	// TIME-WAIT for a minute, and two bursts to one address would need
	// more ephemeral ports than the kernel host has.
	ustack := func(port uint16, extra ...string) burstRun {
		addr := netip.AddrPortFrom(vethtest.UstackIPv4, port)
		args := append([]string{"-iface", p.Ustack.Link, "-addr", netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4).String(),
			"-listen", addr.String(), "-metrics", metricsAddr}, extra...)
		cpu, stop := startServer(t, p, bin, args...)
		before := scrapeIn(t, p.Ustack, metricsAddr)
		if _, ok := before[dropped]; !ok {
			t.Fatalf("%s missing from the scrape", dropped)
		}
		cpu0 := cpu()
		r := burstRun{burstResult: runBurst(t, p, addr, conns), ustack: true}
		r.cpu = cpu() - cpu0
		after := scrapeIn(t, p.Ustack, metricsAddr)
		r.drops = after[dropped] - before[dropped]
		t.Logf("ustack-echo server %s:\n%s", strings.Join(extra, " "), stop())
		return r
	}
	handler := ustack(7000, "-handler")
	netConn := ustack(7100)
	handlerAlways := ustack(7200, "-handler", "-syn-cookies", "always")
	netConnAlways := ustack(7300, "-syn-cookies", "always")
	t.Logf("ustack, handler API, always: %v", handlerAlways)
	t.Logf("ustack, net.Conn, always:    %v", netConnAlways)
	addr := netip.AddrPortFrom(vethtest.UstackHostIPv4, 7000)
	cpu, stop := startServer(t, p, bin, "-stack", "kernel", "-listen", addr.String())
	cpu0 := cpu()
	kernel := burstRun{burstResult: runBurst(t, p, addr, conns)}
	kernel.cpu = cpu() - cpu0
	stop()

	t.Logf("ustack, handler API: %v", handler)
	t.Logf("ustack, net.Conn:    %v", netConn)
	t.Logf("kernel:              %v", kernel)
	if kernel.Failed > 0 {
		t.Fatalf("the kernel-served burst had %d failures: the client or the topology is broken", kernel.Failed)
	}
	for _, r := range []struct {
		name string
		burstRun
	}{{"handler API", handler}, {"net.Conn", netConn}, {"handler API, always", handlerAlways}, {"net.Conn, always", netConnAlways}} {
		if r.Failed > 0 {
			t.Errorf("ustack, %s: %d of %d connections failed", r.name, r.Failed, conns)
		}
	}
}
