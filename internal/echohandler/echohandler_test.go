package echohandler

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/stack"
)

func pipe(t *testing.T) (client, server *stack.Stack) {
	t.Helper()
	c, s, err := stack.NewPipe(
		stack.Config{Addrs: []netip.Prefix{netip.MustParsePrefix("198.18.7.1/24")}},
		stack.Config{Addrs: []netip.Prefix{netip.MustParsePrefix("198.18.7.2/24")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TestHandlersEndToEnd: the handler clients against the handler echo
// server, and against the net.Conn one (so a handler client's echo check
// is not checked only by its own kind).
func TestHandlersEndToEnd(t *testing.T) {
	client, server := pipe(t)
	ln, err := server.ListenHandler("tcp", ":7", Echo{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	kln, err := server.Listen("tcp", ":8")
	if err != nil {
		t.Fatal(err)
	}
	defer kln.Close()
	go echo.ServeTCP(kln)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, addr := range []string{"198.18.7.2:7", "198.18.7.2:8"} {
		for _, size := range []int{1, 64, 3000} {
			h, err := PingPong(ctx, client, "tcp", addr, echo.PingPongConfig{Size: size, Warmup: 10, Count: 200})
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", addr, size, err)
			}
			if h.TotalCount() != 200 {
				t.Fatalf("%s: %d round trips recorded, want 200", addr, h.TotalCount())
			}
		}
		n, d, err := Rate(ctx, client, echo.RateConfig{Network: "tcp", Address: addr, Conns: 8, Pipeline: 4, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond})
		if err != nil {
			t.Fatalf("rate against %s: %v", addr, err)
		}
		if n == 0 || d < 200*time.Millisecond {
			t.Fatalf("rate against %s: %d requests in %v", addr, n, d)
		}
		t.Logf("%s: %d requests in %v", addr, n, d)
	}
	// echo.Bulk against the handler discard server: the count comes
	// back after the client's FIN (stack.EOFHandler).
	dln, err := server.ListenHandler("tcp", ":9", Discard{})
	if err != nil {
		t.Fatal(err)
	}
	defer dln.Close()
	bc, err := client.Dial("tcp", "198.18.7.2:9")
	if err != nil {
		t.Fatal(err)
	}
	if n, _, err := echo.Bulk(ctx, bc, 100*time.Millisecond); err != nil || n == 0 {
		t.Fatalf("bulk to the handler discard server: %d bytes, %v", n, err)
	}
	bc.Close()
	// A canceled context ends a ping-pong with its error.
	cctx, ccancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, ccancel)
	if _, err := PingPong(cctx, client, "tcp", "198.18.7.2:7", echo.PingPongConfig{Duration: time.Minute}); err != context.Canceled {
		t.Errorf("canceled ping-pong: %v, want context.Canceled", err)
	}
	// Nothing listens: the dial fails.
	if _, err := PingPong(ctx, client, "tcp", "198.18.7.2:10", echo.PingPongConfig{Count: 1}); err == nil {
		t.Error("ping-pong to a closed port succeeded")
	}
}
