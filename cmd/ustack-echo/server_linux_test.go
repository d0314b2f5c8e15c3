package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/vethtest"
)

func TestMain(m *testing.M) {
	maybeRunDemoRole() // the demo's children re-execute this binary
	os.Exit(vethtest.Main(m))
}

// scrapeIn fetches http://addr/metrics from inside host's namespace
// (where the server's loopback is) and returns the sample lines by name
// and labels.
func scrapeIn(t *testing.T, host *vethtest.Host, addr string) map[string]float64 {
	t.Helper()
	var conn net.Conn
	if err := host.Do(func() (err error) { conn, err = net.DialTimeout("tcp", addr, 5*time.Second); return err }); err != nil {
		t.Fatal(err)
	}
	// The connection was made in the namespace; the request can go from
	// any thread.
	used := false
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if used {
				return nil, fmt.Errorf("one connection only")
			}
			used = true
			return conn, nil
		},
	}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// TestPrivilegedServerMetricsAndPcap runs `ustack-echo server -metrics
// -pcap` on a veth pair, echoes through it from the kernel's side, scrapes
// the metrics over the server namespace's loopback before and after, and
// has tshark read the capture once the server has exited; once with
// net.Conn servers, once with -handler.
func TestPrivilegedServerMetricsAndPcap(t *testing.T) {
	for _, handler := range []bool{false, true} {
		name := "net.Conn"
		if handler {
			name = "handler"
		}
		t.Run(name, func(t *testing.T) { testServerMetricsAndPcap(t, handler) })
	}
}

func testServerMetricsAndPcap(t *testing.T, handler bool) {
	vethtest.Tools(t, "tshark", "ip")
	p := vethtest.NewT(t, vethtest.Options{KernelTxChecksumOff: true})
	dir := t.TempDir()
	bin := filepath.Join(dir, "ustack-echo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	pcap := filepath.Join(dir, "server.pcap")
	const metricsAddr = "127.0.0.1:9464"
	listen := netip.AddrPortFrom(vethtest.UstackIPv4, 7000)
	_, stop := startServer(t, p, bin,
		"-iface", p.Ustack.Link, "-addr", netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4).String(),
		"-listen", listen.String(), "-metrics", metricsAddr, "-pcap", pcap, fmt.Sprintf("-handler=%v", handler))
	before := scrapeIn(t, p.Ustack, metricsAddr)
	for _, name := range []string{`ustack_queue_rx_packets_total{queue="0"}`, `ustack_steering_packets_total{reason="redirect_port"}`, `ustack_xsk_kicks_total{queue="0"}`, `ustack_netstack_tcp_valid_segments_received_total`} {
		if _, ok := before[name]; !ok {
			t.Errorf("%s missing from the scrape", name)
		}
	}
	var c net.Conn
	if err := p.Kernel.Do(func() (err error) { c, err = net.DialTimeout("tcp", listen.String(), 5*time.Second); return err }); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := make([]byte, 64)
	const rounds = 100
	for i := 0; i < rounds; i++ {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	after := scrapeIn(t, p.Ustack, metricsAddr)
	for _, name := range []string{`ustack_queue_rx_packets_total{queue="0"}`, `ustack_queue_tx_packets_total{queue="0"}`, `ustack_steering_packets_total{reason="redirect_port"}`, `ustack_netstack_tcp_passive_connection_openings_total`, `ustack_capture_packets_total`} {
		if after[name]-before[name] < 1 {
			t.Errorf("%s: %v before, %v after the echo session", name, before[name], after[name])
		}
	}
	// netstack's segments, and the owned fast path's (a handler's
	// connection it carries).
	segs := func(m map[string]float64) float64 {
		return m[`ustack_netstack_tcp_valid_segments_received_total`] + m[`ustack_owned_fast_path_segments_received_total`]
	}
	if d := segs(after) - segs(before); d < rounds {
		t.Errorf("TCP segments received grew by %v over %d requests", d, rounds)
	}
	out := stop()
	t.Logf("server output:\n%s", out)
	if handler != strings.Contains(out, "handler API") {
		t.Errorf("-handler=%v, but the banner says:\n%s", handler, out)
	}
	if !strings.Contains(out, "capture:") {
		t.Errorf("exit summary lacks the capture line:\n%s", out)
	}
	tshark, err := exec.Command("tshark", "-n", "-r", pcap, "-Y", "tcp.port == 7000 && tcp.len > 0", "-T", "fields", "-e", "frame.number").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	if n := len(strings.Fields(string(tshark))); n < 2*rounds {
		t.Errorf("tshark finds %d TCP segments with data in the capture, want at least %d", n, 2*rounds)
	}
	malformed, err := exec.Command("tshark", "-n", "-r", pcap, "-Y", "_ws.malformed", "-T", "fields", "-e", "frame.number").Output()
	if err != nil || len(strings.Fields(string(malformed))) != 0 {
		t.Errorf("tshark: malformed frames %q (%v)", malformed, err)
	}
}
