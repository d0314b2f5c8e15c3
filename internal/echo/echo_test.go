package echo

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestPingPongChecksEcho: PingPong fails on an echo that is not what it
// sent, whether corrupted or from an earlier round.
func TestPingPongChecksEcho(t *testing.T) {
	for name, serve := range map[string]func(net.Conn){
		"corrupt": func(c net.Conn) {
			buf := make([]byte, 64)
			for i := 0; ; i++ {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if i == 5 {
					buf[40] ^= 1
				}
				c.Write(buf)
			}
		},
		"stale": func(c net.Conn) {
			buf, first := make([]byte, 64), make([]byte, 64)
			for i := 0; ; i++ {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if i == 0 {
					copy(first, buf)
				}
				c.Write(first)
			}
		},
	} {
		a, b := net.Pipe()
		go func() { defer b.Close(); serve(b) }()
		_, err := PingPong(context.Background(), a, PingPongConfig{Size: 64, Warmup: -1, Count: 20})
		a.Close()
		if !errors.Is(err, ErrMismatch) {
			t.Errorf("%s echo: %v, want ErrMismatch", name, err)
		}
	}
}

// The workloads against the servers, over the kernel's loopback.
func TestWorkloadsOverLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 3)
	go func() { done <- ServeTCP(ln) }()
	go func() { done <- ServeDiscard(dln) }()
	go func() { done <- ServeSource(sln) }()
	ctx := context.Background()
	dial := (&net.Dialer{Timeout: 5 * time.Second}).DialContext

	c, err := dial(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	h, err := PingPong(ctx, c, PingPongConfig{Size: 100, Warmup: 10, Count: 200})
	c.Close()
	if err != nil || h.TotalCount() != 200 || h.ValueAtQuantile(50) <= 0 {
		t.Fatalf("ping-pong: %v, %d round trips", err, h.TotalCount())
	}
	if _, err := PingPong(ctx, c, PingPongConfig{}); err == nil {
		t.Error("ping-pong without a count or duration accepted")
	}

	n, el, err := Rate(ctx, dial, RateConfig{Network: "tcp", Address: ln.Addr().String(), Conns: 4, Pipeline: 3, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond})
	if err != nil || n <= 0 || n%3 != 0 || el < 200*time.Millisecond {
		t.Fatalf("rate: %d requests in %v: %v", n, el, err)
	}

	c, err = dial(ctx, "tcp", dln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var b int64
	b, _, err = Bulk(ctx, c, 100*time.Millisecond)
	c.Close()
	if err != nil || b < 256<<10 {
		t.Fatalf("bulk: %d bytes: %v", b, err)
	}

	c, err = dial(ctx, "tcp", sln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, el, err = Download(ctx, c, 100*time.Millisecond)
	c.Close()
	if err != nil || b < 256<<10 || el < 100*time.Millisecond {
		t.Fatalf("download: %d bytes in %v: %v", b, el, err)
	}

	ln.Close()
	dln.Close()
	sln.Close()
	for i := 0; i < 3; i++ {
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	}
}

func TestServeUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ServeUDP(pc) }()
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, err := PingPong(context.Background(), c, PingPongConfig{Size: 64, Warmup: 5, Count: 50})
	if err != nil || h.TotalCount() != 50 {
		t.Fatalf("udp ping-pong: %v", err)
	}
	pc.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
