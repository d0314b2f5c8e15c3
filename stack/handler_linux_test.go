package stack

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedHandlerEcho: a Handler serves a kernel client over a veth
// pair at its defaults (partial checksums from the kernel end), IPv4 and
// IPv6 ping-pongs of many sizes, then 64 MiB echoed both ways at once,
// checked by SHA-256: the stream holds back what the send buffer cannot
// take while the kernel client is still writing.
func TestPrivilegedHandlerEcho(t *testing.T) {
	p, s := newVethStack(t, vethtest.Options{}, Config{Poll: Spin})
	h := &echoHandler{}
	ln, err := s.ListenHandler("tcp", ":9003", h)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, a := range []netip.Addr{vethtest.UstackIPv4, vethtest.UstackIPv6} {
		c, err := kernelDial(context.Background(), p, "tcp", netip.AddrPortFrom(a, 9003).String())
		if err != nil {
			t.Fatalf("kernel dial %v: %v", a, err)
		}
		pingPong(t, c, 300)
		c.Close()
	}
	const size = 64 << 20
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	want := sha256.Sum256(data)
	c, err := kernelDial(context.Background(), p, "tcp", netip.AddrPortFrom(vethtest.UstackIPv4, 9003).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	start := time.Now()
	wrote := make(chan error, 1)
	go func() {
		var err error
		for off := 0; off < size && err == nil; off += 100_003 {
			_, err = c.Write(data[off:min(off+100_003, size)])
		}
		wrote <- err
	}()
	sum, n, rerr := sink(io.LimitReader(c, size))
	if werr := <-wrote; werr != nil || rerr != nil {
		errs := h.closeErrs()
		t.Fatalf("write: %v; read after %d of %d bytes: %v; the handler saw %d errors, the first %v", werr, n, size, rerr, len(errs), append(errs, nil)[0])
	}
	if n != size || sum != want {
		t.Fatalf("echoed %d bytes, sha256 match %v", n, sum == want)
	}
	t.Logf("64 MiB each way through a Handler in %v; the stream held writes back %d times", time.Since(start).Round(time.Millisecond), h.drains.Load())
	c.Close()
	waitFor(t, "every OnClose", func() bool { return h.closed.Load() == 3 })
	for _, err := range h.closeErrs() {
		if err != io.EOF {
			t.Errorf("handler saw %v, want only the peers' io.EOF", err)
		}
	}
}
