package xsk_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/vethtest"
	"github.com/ustack-dev/ustack/xsk"
)

// udpFrame builds a 64-byte UDP/IPv4 frame from the Kernel host to the
// owned address, with valid checksums.
func udpFrame(p *vethtest.Pair) []byte {
	f := make([]byte, 14+20+8+22)
	copy(f[0:6], p.Ustack.MAC)
	copy(f[6:12], p.Kernel.MAC)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	src, dst := vethtest.KernelIPv4.As4(), vethtest.UstackIPv4.As4()
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	var s uint32
	for i := 0; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(s))
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], 40000)
	binary.BigEndian.PutUint16(udp[2:], udpPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
	binary.BigEndian.PutUint16(udp[6:], reflector.ChecksumUDP4(ip[12:16], ip[16:20], udp))
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
