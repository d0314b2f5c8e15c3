package stack

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	echosrv "github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/vishvananda/netlink"
)

// childRoleEnv, when set, makes the test binary a server process instead
// of running tests (see TestMain): "echo IFACE" runs a ustack echo
// server on IFACE owning ustack4, prints "ready" and serves until killed.
const childRoleEnv = "USTACK_TEST_CHILD"

func runChild(role string) int {
	f := strings.Fields(role)
	if len(f) != 2 || f[0] != "echo" {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		return 2
	}
	s, err := New(Config{Interface: f[1], Addrs: []netip.Prefix{ustack4}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := s.Listen("tcp4", ":7")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	echosrv.ServeTCP(ln)
	return 0
}

// startChild starts the test binary as a ustack echo server in the Ustack
// host's namespace and waits until it serves.
func startChild(t *testing.T, p *vethtest.Pair) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childRoleEnv+"=echo "+p.Ustack.Link)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Started from a thread in the namespace, the child is born in it.
	if err := p.Ustack.Do(cmd.Start); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("child said %q", line)
		}
		ready <- err
		io.Copy(io.Discard, out)
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("ustack child: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ustack child not ready after 20 s")
	}
	return cmd
}

// TestPrivilegedCrashRestart: a ustack process killed with SIGKILL in the
// middle of a transfer leaves nothing attached that could blackhole the
// interface's traffic (its XDP link goes with the process), a new ustack
// process on the same interface takes over its address, and the host's
// own TCP traffic on the interface flows throughout, without one failed
// round trip.
func TestPrivilegedCrashRestart(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{})
	// The host's own traffic: a kernel echo server on the Ustack host's
	// kernel address, and a client doing round trips all along.
	var kln net.Listener
	if err := p.Ustack.Do(func() (err error) {
		kln, err = net.Listen("tcp4", netip.AddrPortFrom(vethtest.UstackHostIPv4, 9).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer kln.Close()
	go echosrv.ServeTCP(kln)
	hc, err := kernelDial(context.Background(), p, "tcp4", netip.AddrPortFrom(vethtest.UstackHostIPv4, 9).String())
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	var hostTrips atomic.Int64
	var hostErr atomic.Pointer[error]
	stopHost := make(chan struct{})
	var hostWG sync.WaitGroup
	hostWG.Add(1)
	go func() {
		defer hostWG.Done()
		msg, got := []byte("host traffic"), make([]byte, 12)
		for {
			select {
			case <-stopHost:
				return
			default:
			}
			hc.SetDeadline(time.Now().Add(2 * time.Second))
			_, err := hc.Write(msg)
			if err == nil {
				_, err = io.ReadFull(hc, got)
			}
			if err == nil && string(got) != string(msg) {
				err = fmt.Errorf("host echo %q", got)
			}
			if err != nil {
				err = fmt.Errorf("host round trip %d: %w", hostTrips.Load()+1, err)
				hostErr.Store(&err)
				return
			}
			hostTrips.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()

	ustackEcho := func() error {
		c, err := kernelDial(context.Background(), p, "tcp4", netip.AddrPortFrom(ustack4.Addr(), 7).String())
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("takeover")); err != nil {
			return err
		}
		got := make([]byte, 8)
		if _, err := io.ReadFull(c, got); err != nil {
			return err
		}
		if string(got) != "takeover" {
			return fmt.Errorf("echo %q", got)
		}
		return nil
	}

	first := startChild(t, p)
	if err := ustackEcho(); err != nil {
		t.Fatalf("first ustack process: %v", err)
	}
	// A transfer in flight when the process dies.
	tc, err := kernelDial(context.Background(), p, "tcp4", netip.AddrPortFrom(ustack4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	go io.Copy(io.Discard, tc)
	moved := make(chan struct{})
	go func() {
		buf := make([]byte, 64<<10)
		for i := 0; i < 1<<14; i++ {
			tc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := tc.Write(buf); err != nil {
				return
			}
			if i == 16 {
				close(moved)
			}
		}
	}()
	select {
	case <-moved:
	case <-time.After(10 * time.Second):
		t.Fatal("the transfer to the first ustack process did not move")
	}

	xdpAttached := func() bool {
		var attached bool
		if err := p.Ustack.Do(func() error {
			l, err := netlink.LinkByName(p.Ustack.Link)
			if err == nil {
				attached = l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return attached
	}
	if !xdpAttached() {
		t.Fatal("no XDP program attached while the first ustack process runs")
	}
	killed := time.Now()
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	// Nothing of the dead process stays attached to the interface.
	if xdpAttached() {
		t.Error("an XDP program is still attached after the ustack process died")
	}

	startChild(t, p)
	var takeover time.Duration
	for deadline := time.Now().Add(20 * time.Second); ; {
		err := ustackEcho()
		if err == nil {
			takeover = time.Since(killed)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second ustack process does not serve: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stopHost)
	hostWG.Wait()
	if e := hostErr.Load(); e != nil {
		t.Fatal(*e)
	}
	if hostTrips.Load() == 0 {
		t.Fatal("no host round trips")
	}
	t.Logf("takeover: %v from SIGKILL to the new process's first echo; %d host round trips, none failed", takeover, hostTrips.Load())
}
