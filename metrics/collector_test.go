package metrics

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ustack-dev/ustack/stack"
)

var (
	addrA = netip.MustParsePrefix("198.18.3.1/24")
	addrB = netip.MustParsePrefix("198.18.3.2/24")
)

// scrape fetches url and returns each sample line's value by its name and
// labels as printed.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape: %s\n%s", resp.Status, b)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHandlerMovesWithTraffic serves a stack's metrics over loopback,
// runs TCP traffic with faults injected, and checks that the counters a
// scrape shows move as they should.
func TestHandlerMovesWithTraffic(t *testing.T) {
	faults := &stack.Faults{Seed: 3, RX: stack.FaultRates{Drop: 0.02, Corrupt: 0.02}}
	a, b, err := stack.NewPipe(stack.Config{Addrs: []netip.Prefix{addrA}}, stack.Config{Addrs: []netip.Prefix{addrB}, Faults: faults, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(Handler(b))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	url := srv.URL + "/metrics"

	before := scrape(t, url)
	for _, name := range []string{
		`ustack_queue_rx_packets_total{queue="0"}`,
		`ustack_rx_dropped_total{queue="0",reason="bad_checksum"}`,
		`ustack_xsk_rx_ring_full_total{queue="0"}`,
		`ustack_steering_packets_total{reason="redirect_port"}`,
		`ustack_netstack_tcp_valid_segments_received_total`,
		`ustack_netstack_tcp_current_established`,
		`ustack_netstack_ip_packets_received_total`,
		`ustack_netstack_udp_packets_received_total`,
		`ustack_owned_ports`,
		`go_goroutines`,
	} {
		if _, ok := before[name]; !ok {
			t.Errorf("%s missing from the scrape", name)
		}
	}

	l, err := b.Listen("tcp", netip.AddrPortFrom(addrB.Addr(), 80).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := a.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	msg := make([]byte, 1000)
	for i := 0; i < 300; i++ {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			t.Fatal(err)
		}
	}
	after := scrape(t, url)
	for _, name := range []string{
		`ustack_queue_rx_packets_total{queue="0"}`,
		`ustack_queue_tx_packets_total{queue="0"}`,
		`ustack_queue_tx_frames_total{queue="0"}`,
		`ustack_rx_dropped_total{queue="0",reason="bad_checksum"}`,
		`ustack_faults_total{direction="rx",fault="drop",queue="0"}`,
		`ustack_faults_total{direction="rx",fault="corrupt",queue="0"}`,
		`ustack_netstack_tcp_valid_segments_received_total`,
		`ustack_netstack_tcp_passive_connection_openings_total`,
		`ustack_trace_stage_requests_total{stage="rx→processed"}`,
	} {
		if !(after[name] > before[name]) {
			t.Errorf("%s: %v before the traffic, %v after; want it to grow", name, before[name], after[name])
		}
	}
	if n := after[`ustack_netstack_tcp_current_established`]; n != 1 {
		t.Errorf("current established %v, want 1", n)
	}
	if after[`ustack_owned_ports`] < 1 {
		t.Errorf("owned ports %v with a listener", after[`ustack_owned_ports`])
	}
	st := b.Stats()
	if got, want := after[`ustack_faults_total{direction="rx",fault="drop",queue="0"}`], float64(st.Queues[0].FaultsRX.Dropped); got > want {
		t.Errorf("scraped %v drops, stats now say %v", got, want)
	}
	if s := st.Summary(); !strings.Contains(s, "faults rx: dropped") || !strings.Contains(s, "tcp: established 1") || !strings.Contains(s, "worker busy ") {
		t.Errorf("summary lacks faults or TCP:\n%s", s)
	}
}

// TestCollectorLints runs client_golang's metric linter over a stack's
// metrics: names, units and help as Prometheus expects them.
func TestCollectorLints(t *testing.T) {
	a, b, err := stack.NewPipe(stack.Config{Addrs: []netip.Prefix{addrA}}, stack.Config{Addrs: []netip.Prefix{addrB}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	c := NewCollector(b)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, f := range families {
		series += len(f.GetMetric())
	}
	if len(c.netstack) < 100 {
		t.Errorf("%d of netstack's counters exported, want them all (over 100)", len(c.netstack))
	}
	t.Logf("%d metric families (%d of them netstack's), %d series", len(families), len(c.netstack), series)
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
