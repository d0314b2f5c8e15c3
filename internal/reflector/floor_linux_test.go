package reflector_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/vethtest"
)

func TestMain(m *testing.M) { os.Exit(vethtest.Main(m)) }

// TestPrivilegedFloor runs a Floor on one end of a veth pair and drives
// each of its ports from the other: a Conn (raw AF_XDP at the client's
// end too) for the echo, a kernel socket blasting into the sink, and one
// counting the source's stream.
func TestPrivilegedFloor(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{})
	const port = 7000
	var f *reflector.Floor
	var stop func()
	if err := p.Ustack.Do(func() (err error) {
		f, stop, err = reflector.StartFloor(reflector.FloorConfig{Interface: p.Ustack.Link, Addr: vethtest.UstackIPv4, Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer stop()
	floorAddr := netip.AddrPortFrom(vethtest.UstackIPv4, port)

	// Echo, AF_XDP to AF_XDP.
	var c *reflector.Conn
	if err := p.Kernel.Do(func() (err error) {
		c, err = reflector.Dial(p.Kernel.Link, netip.MustParseAddrPort("198.18.0.20:40000"), floorAddr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	for i, size := range []int{1, 64, 1472} {
		msg := bytes.Repeat([]byte{byte(i + 1)}, size)
		if n, err := c.Write(msg); err != nil || n != size {
			t.Fatalf("write %d bytes: %d, %v", size, n, err)
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := c.Read(buf); err != nil || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("echo of %d bytes: %d bytes back, %v", size, n, err)
		}
	}
	if _, err := c.Write(make([]byte, 1473)); err == nil {
		t.Error("a datagram larger than the MTU's was written")
	}
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(buf); err == nil {
		t.Error("read a reply to nothing")
	}
	c.Close()

	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var nc net.Conn
		err := p.Kernel.Do(func() (err error) { nc, err = net.Dial(network, addr); return err })
		return nc, err
	}

	// TCP echo, to the kernel's TCP: messages within a segment and cut
	// into several, up to nearly the 64 KiB window each end announces
	// (the echo never retransmits: a client that sends past its own
	// receive window can lose an echo for good); then a close the floor
	// answers.
	tc, err := dial(context.Background(), "tcp", floorAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	for i, size := range []int{1, 64, 1460, 8192, 30_000, 60_000} {
		msg := make([]byte, size)
		for j := range msg {
			msg[j] = byte(i*31 + j*7)
		}
		go tc.Write(msg)
		back := make([]byte, size)
		if _, err := io.ReadFull(tc, back); err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("TCP echo of %d bytes: %v, equal %v", size, err, bytes.Equal(back, msg))
		}
	}
	tc.(*net.TCPConn).CloseWrite()
	if n, err := tc.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("after our FIN: %d bytes, %v; want the floor's FIN", n, err)
	}
	tc.Close()
	if f.TCP.Load() == 0 {
		t.Error("no TCP reply counted")
	}

	// Sink and source, from kernel sockets.
	f.ResetSink()
	sent, err := reflector.Blast(context.Background(), dial, netip.AddrPortFrom(vethtest.UstackIPv4, port+1).String(), reflector.MaxUDPPayload(1500), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the last frames off the ring
	st := f.Sink()
	if st.Frames < 100 || st.Frames > sent || st.Bytes != st.Frames*int64(reflector.MaxUDPPayload(1500)) || !st.Last.After(st.First) {
		t.Errorf("sink: %+v after %d datagrams sent", st, sent)
	}
	got, err := reflector.CountStream(context.Background(), dial, netip.AddrPortFrom(vethtest.UstackIPv4, port+2).String(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got.Frames < 100 || got.Bytes != got.Frames*int64(reflector.MaxUDPPayload(1500)) || got.Seconds <= 0 || got.Seconds > 1.5 {
		t.Errorf("stream: %+v", got)
	}
	t.Logf("sink %d of %d datagrams in %v; stream %d datagrams in %.3fs", st.Frames, sent, st.Last.Sub(st.First), got.Frames, got.Seconds)
}
