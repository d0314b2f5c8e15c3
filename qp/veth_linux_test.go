package qp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/qptest"
	"github.com/ustack-dev/ustack/qp"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

// side is a queue pair with a 256 KiB region.
type side struct {
	pd  *qp.PD
	cq  *qp.CQ
	q   *qp.QP
	mr  *qp.MR
	buf []byte
}

func newSide(t *testing.T) *side {
	t.Helper()
	dev := qp.NewDevice()
	s := &side{pd: dev.AllocPD(), buf: make([]byte, 256<<10)}
	var err error
	if s.cq, err = dev.CreateCQ(256); err != nil {
		t.Fatal(err)
	}
	if s.mr, err = s.pd.RegMR(s.buf, qp.LocalWrite|qp.RemoteWrite|qp.RemoteRead|qp.RemoteAtomic); err != nil {
		t.Fatal(err)
	}
	if s.q, err = s.pd.CreateQP(qp.DefaultQPConfig(s.cq, s.cq)); err != nil {
		t.Fatal(err)
	}
	if err := s.q.Modify(qp.StateInit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.q.Close() })
	return s
}

func (s *side) next(t *testing.T) qp.WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wc [1]qp.WC
	for s.cq.Poll(wc[:]) == 0 {
		if err := s.cq.Wait(ctx); err != nil {
			t.Fatalf("waiting for a completion: %v (qp err %v)", err, s.q.Err())
		}
	}
	return wc[0]
}

func (s *side) ok(t *testing.T, id uint64) qp.WC {
	t.Helper()
	wc := s.next(t)
	if wc.ID != id || wc.Status != qp.StatusSuccess {
		t.Fatalf("completion %+v, want id %d success (qp err %v)", wc, id, s.q.Err())
	}
	return wc
}

func (s *side) post(t *testing.T, wrs ...qp.SendWR) {
	t.Helper()
	if _, err := s.q.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
}

// newUstack runs ustack on the pair's Ustack end.
func newUstack(t *testing.T, p *vethtest.Pair) *stack.Stack {
	t.Helper()
	var s *stack.Stack
	err := p.Ustack.Do(func() (err error) {
		s, err = stack.New(stack.Config{Interface: p.Ustack.Link, Logf: t.Logf,
			Addrs: []netip.Prefix{netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4)}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// session runs every operation from a to b, then an access violation
// that ends the connection with a Terminate. withImm adds an RDMA Write
// with immediate (RFC 7306 Immediate Data, which Wireshark 4.0 does not
// decode).
func session(t *testing.T, a, b *side, withImm bool) {
	t.Helper()
	for i := range a.buf {
		a.buf[i] = byte(i*31 + 7)
	}
	inv, err := b.pd.RegMR(make([]byte, 64), qp.LocalWrite|qp.RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	b.q.PostRecv([]qp.RecvWR{
		{ID: 100, SGL: []qp.SGE{{Offset: 200 << 10, Len: 4096, Key: b.mr.Key()}}},
		{ID: 101, SGL: []qp.SGE{{Offset: 210 << 10, Len: 16, Key: b.mr.Key()}}},
		{ID: 102},
	})
	a.post(t,
		qp.SendWR{ID: 1, Op: qp.WRWrite, Flags: qp.Signaled, SGL: []qp.SGE{{Offset: 0, Len: 100 << 10, Key: a.mr.Key()}}, RemoteKey: b.mr.Key()},
		qp.SendWR{ID: 2, Op: qp.WRSend, Flags: qp.Signaled, SGL: []qp.SGE{{Offset: 0, Len: 3000, Key: a.mr.Key()}, {Offset: 9000, Len: 1000, Key: a.mr.Key()}}},
		qp.SendWR{ID: 3, Op: qp.WRSendWithInv, Flags: qp.Signaled | qp.Inline | qp.Solicited, Inline: []byte("invalidate"), InvKey: inv.Key()},
	)
	a.ok(t, 1)
	a.ok(t, 2)
	a.ok(t, 3)
	if wc := b.ok(t, 100); wc.Len != 4000 || !bytes.Equal(b.buf[200<<10:200<<10+3000], a.buf[:3000]) ||
		!bytes.Equal(b.buf[200<<10+3000:200<<10+4000], a.buf[9000:10000]) {
		t.Fatalf("send: %+v", wc)
	}
	if wc := b.ok(t, 101); wc.Flags&qp.WCWithInv == 0 || wc.InvKey != inv.Key() {
		t.Fatalf("send with invalidate: %+v", wc)
	}
	if !bytes.Equal(b.buf[:100<<10], a.buf[:100<<10]) {
		t.Fatal("write data differs")
	}
	if withImm {
		a.post(t, qp.SendWR{ID: 4, Op: qp.WRWriteWithImm, Flags: qp.Signaled, SGL: []qp.SGE{{Offset: 0, Len: 64, Key: a.mr.Key()}},
			RemoteKey: b.mr.Key(), RemoteOffset: 150 << 10, Imm: 0x1234})
		a.ok(t, 4)
		if wc := b.ok(t, 102); wc.Op != qp.WCRecvWithImm || wc.Imm != 0x1234 {
			t.Fatalf("write with immediate: %+v", wc)
		}
	}
	// Read 80 KiB back into a's upper half, in two SGEs.
	a.post(t, qp.SendWR{ID: 5, Op: qp.WRRead, Flags: qp.Signaled, RemoteKey: b.mr.Key(), RemoteOffset: 4096,
		SGL: []qp.SGE{{Offset: 128 << 10, Len: 40 << 10, Key: a.mr.Key()}, {Offset: 200 << 10, Len: 40 << 10, Key: a.mr.Key()}}})
	a.ok(t, 5)
	if !bytes.Equal(a.buf[128<<10:168<<10], b.buf[4096:4096+40<<10]) || !bytes.Equal(a.buf[200<<10:240<<10], b.buf[4096+40<<10:4096+80<<10]) {
		t.Fatal("read data differs")
	}
	// Atomics, on a word a sets with a Write first (b's memory is only
	// touched by b's engine, and checked through a's completions).
	var ten [8]byte
	binary.NativeEndian.PutUint64(ten[:], 10)
	res := func(off uint64) []qp.SGE { return []qp.SGE{{Offset: off, Len: 8, Key: a.mr.Key()}} }
	a.post(t,
		qp.SendWR{ID: 9, Op: qp.WRWrite, Flags: qp.Inline, Inline: ten[:], RemoteKey: b.mr.Key(), RemoteOffset: 120 << 10},
		qp.SendWR{ID: 6, Op: qp.WRFetchAdd, Flags: qp.Signaled, SGL: res(0), RemoteKey: b.mr.Key(), RemoteOffset: 120 << 10, CompareAdd: 5},
		qp.SendWR{ID: 7, Op: qp.WRCmpSwap, Flags: qp.Signaled, SGL: res(8), RemoteKey: b.mr.Key(), RemoteOffset: 120 << 10, CompareAdd: 15, Swap: 99},
		qp.SendWR{ID: 10, Op: qp.WRFetchAdd, Flags: qp.Signaled, SGL: res(16), RemoteKey: b.mr.Key(), RemoteOffset: 120 << 10},
	)
	a.ok(t, 6)
	a.ok(t, 7)
	a.ok(t, 10)
	if got := [3]uint64{binary.NativeEndian.Uint64(a.buf), binary.NativeEndian.Uint64(a.buf[8:]), binary.NativeEndian.Uint64(a.buf[16:])}; got != [3]uint64{10, 15, 99} {
		t.Fatalf("atomics returned %v, want [10 15 99]", got)
	}
	// A Read beyond the region: Terminate, remote access status, error.
	a.post(t, qp.SendWR{ID: 8, Op: qp.WRRead, Flags: qp.Signaled, SGL: []qp.SGE{{Offset: 0, Len: 16, Key: a.mr.Key()}}, RemoteKey: b.mr.Key(), RemoteOffset: 256<<10 - 8})
	if wc := a.next(t); wc.ID != 8 || wc.Status != qp.StatusRemoteAccess || !errors.Is(a.q.Err(), qp.ErrRemoteAccess) {
		t.Fatalf("out-of-bounds read: %+v, err %v", wc, a.q.Err())
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.q.State() != qp.StateError && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(b.q.Err(), qp.ErrProtocol) {
		t.Fatalf("responder err %v", b.q.Err())
	}
}

// kernelListen listens in the Kernel host's namespace.
func kernelListen(t *testing.T, p *vethtest.Pair, port uint16) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := p.Kernel.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(p.Kernel.IPv4, port).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func kernelDial(p *vethtest.Pair, addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var c net.Conn
		err := p.Kernel.Do(func() (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, "tcp4", addr)
			return err
		})
		return c, err
	}
}

func TestPrivilegedQueuePairInterop(t *testing.T) {
	p := vethtest.NewT(t, vethtest.Options{})
	s := newUstack(t, p)
	t.Run("ustack initiator, kernel responder", func(t *testing.T) {
		ln := kernelListen(t, p, 4791)
		a, b := newSide(t), newSide(t)
		qptest.Link(t, a.q, b.q, func(ctx context.Context) (net.Conn, error) {
			return s.DialContext(ctx, "tcp4", ln.Addr().String())
		}, ln, []byte("ini"), []byte("resp"))
		session(t, a, b, true)
	})
	t.Run("kernel initiator, ustack responder", func(t *testing.T) {
		ln, err := s.Listen("tcp4", netip.AddrPortFrom(vethtest.UstackIPv4, 4792).String())
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		a, b := newSide(t), newSide(t)
		qptest.Link(t, a.q, b.q, kernelDial(p, ln.Addr().String()), ln, []byte("ini"), []byte("resp"))
		session(t, a, b, true)
	})
	t.Run("kernel responder reads and writes ustack memory", func(t *testing.T) {
		ln := kernelListen(t, p, 4793)
		a, b := newSide(t), newSide(t)
		qptest.Link(t, a.q, b.q, func(ctx context.Context) (net.Conn, error) {
			return s.DialContext(ctx, "tcp4", ln.Addr().String())
		}, ln, []byte("ini"), []byte("resp"))
		// Now the kernel-TCP side (b) drives the ustack side (a).
		session(t, b, a, true)
	})
}

// tsharkArgs decode iWARP from a capture: MPA is found heuristically, so
// the heuristics that would claim the same bytes are off; -2 reassembles.
var tsharkArgs = []string{"-o", "tcp.try_heuristic_first:TRUE", "--disable-protocol", "rpcordma",
	"--disable-heuristic", "smb_direct_iwarp", "-2"}

// TestPrivilegedWireConformance captures a queue pair session between
// ustack and a kernel-TCP queue pair on the veth pair and has Wireshark's
// dissectors (iwarp_mpa, iwarp_ddp_rdmap) decode it: every TCP payload
// byte must belong to MPA, with good CRCs and nothing malformed.
func TestPrivilegedWireConformance(t *testing.T) {
	vethtest.Privileged(t)
	vethtest.Tools(t, "tshark")
	p := vethtest.NewT(t, vethtest.Options{})
	s := newUstack(t, p)
	pcap := filepath.Join(t.TempDir(), "qp.pcap")
	if d := os.Getenv("QP_PCAP"); d != "" {
		pcap = d
	}
	// Capture on the kernel's end, inside its namespace.
	// Started from a thread inside the namespace, tshark inherits it.
	cap := exec.Command("tshark", "-i", p.Kernel.Link, "-w", pcap, "-f", "tcp")
	stderr, err := cap.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kernel.Do(cap.Start); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cap.Process.Signal(os.Interrupt)
			cap.Wait()
		}
	}
	defer stop()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			// "Capturing on" comes first; the capture runs from
			// "Capture started".
			if strings.Contains(sc.Text(), "Capture started") {
				close(ready)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("tshark did not start capturing")
	}
	time.Sleep(100 * time.Millisecond)

	ln := kernelListen(t, p, 4791)
	a, b := newSide(t), newSide(t)
	qptest.Link(t, a.q, b.q, func(ctx context.Context) (net.Conn, error) {
		return s.DialContext(ctx, "tcp4", ln.Addr().String())
	}, ln, []byte("ini"), []byte("resp"))
	session(t, a, b, false)
	a.q.Close()
	b.q.Close()
	time.Sleep(200 * time.Millisecond) // the last segments reach the capture
	stop()

	decode := func(extra ...string) string {
		out, err := exec.Command("tshark", append(append([]string{"-r", pcap}, tsharkArgs...), extra...)...).Output()
		if err != nil {
			t.Fatalf("tshark: %v", err)
		}
		return string(out)
	}
	// Every segment with payload is dissected as MPA or is part of a PDU
	// reassembled into a later one, or is a retransmission, whose payload
	// Wireshark does not dissect again (on a loaded machine a tail loss
	// probe can resend a segment whose ACK came late).
	segments, resent := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(decode("-Y", "tcp.len > 0", "-T", "fields",
		"-e", "frame.number", "-e", "frame.protocols", "-e", "tcp.reassembled_in",
		"-e", "tcp.analysis.retransmission", "-e", "tcp.analysis.fast_retransmission",
		"-e", "tcp.analysis.spurious_retransmission")), "\n") {
		f := append(strings.Split(line, "\t"), "", "", "", "", "")
		if f[0] == "" {
			t.Fatalf("tshark line %q", line)
		}
		segments++
		if f[3] != "" || f[4] != "" || f[5] != "" {
			resent++
			continue
		}
		if !strings.Contains(f[1], "iwarp_mpa") && f[2] == "" {
			t.Errorf("frame %s: payload not dissected as MPA (protocols %s)", f[0], f[1])
		}
	}
	if resent > segments/10 {
		t.Errorf("%d of %d segments with payload are retransmissions", resent, segments)
	}
	verbose := decode("-V")
	for _, bad := range []string{"Malformed", "Bad CRC32", "ULPDU length field does not contain", "Dissector bug"} {
		if n := strings.Count(verbose, bad); n > 0 {
			t.Errorf("decoded capture has %d × %q", n, bad)
		}
	}
	good := strings.Count(verbose, "(Good CRC32)")
	for _, want := range []string{"ID Req frame", "ID Rep frame", "OpCode: Write (0x0)", "OpCode: Read Request (0x1)",
		"OpCode: Read Response (0x2)", "OpCode: Send (0x3)", "OpCode: Send with SE and Invalidate (0x6)",
		"OpCode: Atomic Request (0xa)", "OpCode: Atomic Response (0xb)", "OpCode: Terminate (0x7)"} {
		if !strings.Contains(verbose, want) {
			t.Errorf("decoded capture has no %q", want)
		}
	}
	if segments < 20 || good < 80 {
		t.Errorf("%d segments with payload, %d FPDUs with a good CRC: too few for the session", segments, good)
	}
	t.Logf("%d TCP segments with payload (%d retransmitted), %d FPDUs with a good CRC32c, nothing malformed", segments, resent, good)
}
