package stack

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedTinyUMEM: with the smallest rings and UMEM ustack accepts
// (64 TX frames, 128 RX frames) and 32 connections each echoing 2 MiB
// through a ustack server at once, frames run out again and again (the
// kernel drops what finds the fill ring empty; a write that finds no TX
// frame fails and TCP sends it again); that must end in backpressure and
// retransmission, never in a deadlock or in lost or corrupted data.
func TestPrivilegedTinyUMEM(t *testing.T) {
	p, s := newVethStack(t, vethtest.Options{}, Config{RingSize: 64, RxRingSize: 128, Poll: Spin})
	ln, err := s.Listen("tcp", ":7")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	const conns, size = 32, 2 << 20
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				c, err := kernelDial(context.Background(), p, "tcp4", netip.AddrPortFrom(ustack4.Addr(), 7).String())
				if err != nil {
					return err
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(90 * time.Second))
				data := make([]byte, size)
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
				go c.Write(data)
				sum, n, err := sink(io.LimitReader(c, size))
				if err != nil {
					return err
				}
				if n != size || sum != sha256.Sum256(data) {
					return fmt.Errorf("connection %d: echo of %d bytes differs (%d bytes back)", i, size, n)
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	st := s.Stats()
	var noFrame, fillEmpty, rxDropped uint64
	for _, q := range st.Queues {
		noFrame += q.TxNoFrame
		fillEmpty += q.XSK.FillRingEmpty
		rxDropped += q.XSK.RxDropped
	}
	t.Logf("%d connections × %d bytes echoed; frames dropped by the kernel for want of a fill frame: %d (RX drops %d); writes that found no TX frame: %d; TCP retransmits: %d",
		conns, size, fillEmpty, rxDropped, noFrame, st.TCP.Retransmits)
	if noFrame+fillEmpty+rxDropped == 0 {
		t.Error("frames never ran out: the test did not exercise exhaustion")
	}
}
