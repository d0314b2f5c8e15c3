package xsk_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/ustack-dev/ustack/xsk"
)

// udpFrame builds a 64-byte UDP/IPv4 frame from the Kernel host to the
// owned address, with valid checksums.
func udpFrame(p *vethtest.Pair) []byte {
	f := testpkt.UDP(vethtest.KernelIPv4, vethtest.UstackIPv4, 40000, udpPort, make([]byte, 22))
	testpkt.SetMACs(f, p.Ustack.MAC, p.Kernel.MAC)
	return f
}

// BenchmarkPrivilegedVethReceive measures how many packets per second one
// copy-mode AF_XDP socket receives over veth. A copy-mode XSK on the Kernel
// end transmits b.N 64-byte UDP frames as fast as it can; the measured
// socket on the Ustack end receives and recycles them in batches of 64 by
// busy polling. Both run on this machine's two vCPUs, so the figure is the
// pair's, sender included. Reported: rx-pps (received per second of the
// run), and drop% (sent but not received: the receiver fell behind).
func BenchmarkPrivilegedVethReceive(b *testing.B) {
	r := newRig(b, 1)
	rx := r.socks[0]
	var tx *xsk.Socket
	var txUMEM *xsk.UMEM
	err := r.pair.Kernel.Do(func() (err error) {
		if txUMEM, err = xsk.NewUMEM(xsk.UMEMConfig{FrameCount: 4096, FrameSize: 2048}); err != nil {
			return err
		}
		tx, err = xsk.Open(txUMEM, xsk.Config{Interface: r.pair.Kernel.Link, FillSize: 64, TxFrames: 4000, TxSize: 2048, CompletionSize: 2048})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	defer txUMEM.Close()
	defer tx.Close()
	frame := udpFrame(r.pair)

	var sent atomic.Int64
	stop := make(chan struct{})
	senderDone := make(chan struct{})
	total := int64(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	go func() {
		defer close(senderDone)
		descs := make([]xsk.Desc, 64)
		deadline := time.Now().Add(2 * time.Minute)
		for sent.Load() < total && time.Now().Before(deadline) {
			select {
			case <-stop:
				return
			default:
			}
			tx.Complete()
			n := 0
			for ; n < len(descs) && sent.Load()+int64(n) < total; n++ {
				a, ok := tx.Alloc()
				if !ok {
					break
				}
				copy(txUMEM.Frame(a), frame)
				descs[n] = xsk.Desc{Addr: a, Len: uint32(len(frame))}
			}
			q, err := tx.Transmit(descs[:n])
			for _, d := range descs[q:n] {
				tx.Free(d.Addr)
			}
			if err != nil {
				return
			}
			sent.Add(int64(q))
		}
	}()

	descs := make([]xsk.Desc, 64)
	var got int64
	idle := time.Time{}
	for got < total {
		n := rx.Receive(descs)
		if n == 0 {
			// The sender is done and nothing has come for 100ms: the
			// rest were dropped.
			select {
			case <-senderDone:
				if idle.IsZero() {
					idle = time.Now()
				} else if time.Since(idle) > 100*time.Millisecond {
					goto done
				}
			default:
			}
			continue
		}
		idle = time.Time{}
		got += int64(n)
		rx.Recycle(descs[:n])
	}
done:
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	<-senderDone
	b.ReportMetric(float64(got)/elapsed.Seconds(), "rx-pps")
	if s := sent.Load(); s > 0 {
		b.ReportMetric(100*float64(s-got)/float64(s), "drop%")
	}
}
