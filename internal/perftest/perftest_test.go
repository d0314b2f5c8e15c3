package perftest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/qp"
)

func TestParamsRoundTrip(t *testing.T) {
	for _, p := range []Params{{Test: "write_bw", Size: 65536, Iters: 7, rkey: 0x101}, {Test: "write_lat", Size: 64, Iters: 9, rkey: 0x201, Handler: true}} {
		g, err := parseParams(p.encode())
		if err != nil || g != p {
			t.Fatalf("parsed %+v, %v; want %+v", g, err, p)
		}
	}
	for _, bad := range []string{"", "ustack-perf test=nope size=1 iters=1 rkey=1 handler=false", "ustack-perf test=write_lat size=0 iters=1 rkey=1 handler=false",
		"ustack-perf test=atomic_lat size=64 iters=1 rkey=1 handler=false", "ustack-perf test=write_lat size=x iters=1 rkey=1 handler=false",
		"ustack-perf test=write_lat size=1 iters=1 rkey=1", "ustack-perf test=read_lat size=1 iters=1 rkey=1 handler=true",
		"ustack-perf test=write_lat size=1 iters=1 rkey=1 handler=maybe"} {
		if _, err := parseParams([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestEveryTestOverLoopback runs each test, small, between a client and
// a server over loopback kernel TCP, and checks the output rows.
func TestEveryTestOverLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := qp.NewListener(ln)
	dial := func(ctx context.Context) (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }
	for _, test := range append(TestNames, "write_lat/handler") {
		if RaceEnabled && (test == "write_lat" || test == "send_bw") {
			t.Logf("%s: skipped under the race detector (it polls memory the queue pair writes)", test)
			continue
		}
		test, mode, _ := strings.Cut(test, "/")
		prm := Params{Test: test, Size: 256, Iters: 300, Handler: mode == "handler"}
		if test == "atomic_lat" {
			prm.Size = 8
		}
		errc := make(chan error, 1)
		go func() { _, err := Serve(ctx, l); errc <- err }()
		r, err := Run(ctx, dial, prm)
		if err != nil {
			t.Fatalf("%s: client: %v", test, err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("%s: server: %v", test, err)
		}
		if strings.HasSuffix(test, "_lat") {
			if len(r.Lat) != prm.Iters {
				t.Fatalf("%s: %d samples", test, len(r.Lat))
			}
			if f := strings.Fields(LatRow(prm.Size, prm.Iters, r.Lat)); len(f) != 9 {
				t.Fatalf("%s: row %q", test, f)
			}
		} else {
			if r.Bytes != int64(prm.Size*prm.Iters) || r.Elapsed <= 0 {
				t.Fatalf("%s: %+v", test, r)
			}
			if f := strings.Fields(BwRow(prm.Size, prm.Iters, r)); len(f) != 5 {
				t.Fatalf("%s: row %q", test, f)
			}
		}
	}
}

func TestLoadByte(t *testing.T) {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(i + 1)
	}
	for i := range b {
		if got := loadByte(&b[i]); got != byte(i+1) {
			t.Fatalf("loadByte(&b[%d]) = %d", i, got)
		}
	}
}
