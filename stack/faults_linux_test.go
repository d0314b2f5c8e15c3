package stack

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedFaultsWithKernel moves data both ways between ustack and
// the kernel's TCP on a veth pair, with faults injected in ustack's link
// layer in both directions (1% each of drop, corruption, duplication,
// reordering and delay), and checks SHA-256 at each receiving end.
func TestPrivilegedFaultsWithKernel(t *testing.T) {
	r := FaultRates{Drop: 0.01, Corrupt: 0.01, Duplicate: 0.01, Reorder: 0.01, Delay: 0.01}
	p, s := newVethStack(t, vethtest.Options{KernelTxChecksumOff: true}, Config{Faults: &Faults{Seed: 11, RX: r, TX: r}})
	const size = 4 << 20
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	want := sha256.Sum256(data)

	uln, err := s.Listen("tcp", netip.AddrPortFrom(vethtest.UstackIPv4, 9100).String())
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	var kln net.Listener
	if err := p.Kernel.Do(func() (err error) { kln, err = net.Listen("tcp", "198.18.0.1:9101"); return err }); err != nil {
		t.Fatal(err)
	}
	defer kln.Close()
	sunk := sinkEach(90*time.Second, uln, kln)
	kc, err := kernelDial(context.Background(), p, "tcp", uln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	uc, err := s.DialContext(ctx, "tcp", "198.18.0.1:9101")
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	start := time.Now()
	for _, c := range []net.Conn{kc, uc} {
		go func(c net.Conn) {
			c.SetDeadline(time.Now().Add(90 * time.Second))
			if _, err := c.Write(data); err != nil {
				t.Error(err)
			}
			c.(interface{ CloseWrite() error }).CloseWrite()
			io.Copy(io.Discard, c)
		}(c)
	}
	for range 2 {
		g := <-sunk
		if g.err != nil || g.n != size || g.sum != want {
			t.Fatalf("received %d bytes (err %v), hash match %v; stats:\n%s", g.n, g.err, g.sum == want, s.Stats().Summary())
		}
	}
	st := s.Stats()
	q := st.Queues[0]
	t.Logf("%d bytes each way in %v; injected rx %+v tx %+v; worker checksum drops %d",
		size, time.Since(start).Round(time.Millisecond), q.FaultsRX, q.FaultsTX, q.RxBadChecksum)
	if q.FaultsRX.Corrupted == 0 || q.FaultsTX.Dropped == 0 || q.RxBadChecksum == 0 {
		t.Errorf("faults not injected or corruption not caught: %+v %+v, checksum drops %d", q.FaultsRX, q.FaultsTX, q.RxBadChecksum)
	}
}
