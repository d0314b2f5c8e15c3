package main

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

// goRuntimeRSS is what an idle server may keep resident beside its
// UMEM: the binary's text and data, the Go runtime's heap, stacks and
// metadata, netstack's tables, the AF_XDP rings. Measured at about 15.9
// MiB (AMD EPYC, Go 1.26: 13 MiB of the binary's pages, 3 MiB of the
// rest), so 16 MiB left a tenth of a MiB between the test and a failure
// by chance; 20 MiB still fails a server whose idle memory grew by a
// quarter.
const goRuntimeRSS = 20 << 20

// procStatus returns field (e.g. "VmRSS") of /proc/pid/status, in bytes.
func procStatus(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("/proc/%d/status: %q: %v", pid, line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// TestPrivilegedIdleFootprint runs a default one-queue `ustack-echo
// server` on a veth pair (MTU 1500), echoes once through it and lets it
// idle. The UMEM it reports must be the default config's,
// stack.DefaultUMEMSize, and its RSS must stay within that plus
// goRuntimeRSS. AF_XDP charges the UMEM to RLIMIT_MEMLOCK, not to VmLck,
// and the stack maps it populated, so RSS is the figure that shows it.
func TestPrivilegedIdleFootprint(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{KernelTxChecksumOff: true})
	bin := filepath.Join(t.TempDir(), "ustack-echo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	addr := netip.AddrPortFrom(vethtest.UstackIPv4, 7000)
	srv := startServerProc(t, p, bin, "-iface", p.Ustack.Link, "-addr", netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4).String(), "-listen", addr.String())
	var umem int
	for _, line := range strings.Split(srv.printed, "\n") {
		if _, err := fmt.Sscanf(line, "UMEM %d bytes", &umem); err == nil {
			break
		}
	}
	if umem != stack.DefaultUMEMSize {
		t.Errorf("the server reported UMEM %d bytes per queue, want the default %d:\n%s", umem, stack.DefaultUMEMSize, srv.printed)
	}
	var c net.Conn
	if err := p.Kernel.Do(func() (err error) { c, err = net.DialTimeout("tcp4", addr.String(), 5*time.Second); return err }); err != nil {
		t.Fatal(err)
	}
	msg := []byte("footprint")
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, msg); err != nil {
		t.Fatal(err)
	}
	c.Close()
	time.Sleep(time.Second)
	rss := procStatus(t, srv.pid, "VmRSS")
	anon, file := procStatus(t, srv.pid, "RssAnon"), procStatus(t, srv.pid, "RssFile")
	t.Logf("idle default server: RSS %.1f MiB (anonymous %.1f, file %.1f), UMEM %.1f MiB per queue",
		float64(rss)/(1<<20), float64(anon)/(1<<20), float64(file)/(1<<20), float64(umem)/(1<<20))
	if rss > umem+goRuntimeRSS {
		t.Errorf("idle RSS %d bytes, over the UMEM's %d plus the runtime's %d", rss, umem, goRuntimeRSS)
	}
	t.Log(srv.stop())
}
