package reflector_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedBulkXDP: the bulk floors with AF_XDP at both ends, at MTU
// 1500 and 9000 (multi-buffer: each datagram a chain of frames). What
// BlastXDP sends reaches the Floor's sink as whole MTU-sized datagrams,
// no more than were sent; CountStreamXDP counts whole MTU-sized
// datagrams of the source's stream over about the time asked for.
func TestPrivilegedBulkXDP(t *testing.T) {
	for _, mtu := range []int{1500, 9000} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			p := vethtest.NewT(t, vethtest.Options{MTU: mtu})
			const port = 7000
			f := startFloor(t, p, reflector.FloorConfig{Port: port})
			size := reflector.MaxUDPPayload(mtu)
			const d = 200 * time.Millisecond
			var sent int64
			var got reflector.Count
			if err := p.Kernel.Do(func() (err error) {
				if _, err := reflector.BlastXDP(context.Background(), p.Kernel.Link, netip.MustParseAddrPort("198.18.0.20:40000"),
					netip.AddrPortFrom(vethtest.UstackIPv4, port+1), size+1, d); err == nil {
					t.Error("a datagram larger than the MTU's accepted")
				}
				t0 := time.Now()
				sent, err = reflector.BlastXDP(context.Background(), p.Kernel.Link, netip.MustParseAddrPort("198.18.0.20:40000"),
					netip.AddrPortFrom(vethtest.UstackIPv4, port+1), size, d)
				if took := time.Since(t0); took > d+3*time.Second {
					t.Errorf("BlastXDP took %v", took)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // the last frames off the ring
			st := f.Sink()
			if st.Frames < 100 || st.Frames > sent || st.Bytes != st.Frames*int64(size) || !st.Last.After(st.First) {
				t.Errorf("sink: %+v after %d datagrams sent", st, sent)
			}
			c := st.Count()
			t.Logf("sink: %d of %d datagrams of %d bytes in %.3fs: %.2f Gbit/s", st.Frames, sent, size, c.Seconds, float64(c.Bytes)*8/c.Seconds/1e9)

			if err := p.Kernel.Do(func() (err error) {
				got, err = reflector.CountStreamXDP(context.Background(), p.Kernel.Link, netip.MustParseAddrPort("198.18.0.20:40001"),
					netip.AddrPortFrom(vethtest.UstackIPv4, port+2), d)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if got.Frames < 100 || got.Bytes != got.Frames*int64(size) || got.Seconds < 0.1 || got.Seconds > 1.5 {
				t.Errorf("stream: %+v", got)
			}
			t.Logf("stream: %d datagrams of %d bytes in %.3fs: %.2f Gbit/s", got.Frames, size, got.Seconds, float64(got.Bytes)*8/got.Seconds/1e9)
		})
	}
}
