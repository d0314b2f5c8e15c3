package stack

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/seqnum"
	"github.com/ustack-dev/ustack/stack/internal/link"
	"github.com/ustack-dev/ustack/xsk"
)

// A frame loop is the server's side of a request alone: a scripted peer
// opens one connection to a ustack echo server (a Handler, or a goroutine
// over net.Conn), then writes each 64-byte request frame straight onto
// the wire and spins on the wire for the reply frame. No client stack, no
// client goroutine hand-offs: what a round costs is the server's RX ring
// → TCP → application → TCP → TX ring, plus the wire.

const loopMsg = 64

type frameLoop struct {
	p        *scriptPeer
	seq, ack seqnum.Value // next to send; next expected from ustack
	tmpl     []byte       // the request frame; seq, ack and checksum patched per round
	rx       [link.BatchSize]xsk.Desc
	tx       [1]xsk.Desc
	src, dst tcpip.Address
}

// newFrameLoop connects a scripted peer to an echo server on ustack: a
// Handler if handler, else a goroutine echoing over net.Conn.
func newFrameLoop(t testing.TB, handler bool, cfg func(*Config)) *frameLoop {
	t.Helper()
	p := newScriptPeer(t, scriptOptions{Config: cfg})
	p.t = quietTB{p.t}
	if handler {
		ln, err := p.s.ListenHandler("tcp4", netip.AddrPortFrom(p.remote.Addr(), 80).String(), &echoHandler{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
		p.Send(seg{Flags: "S", Seq: 0})
		p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
		p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	} else {
		c := p.Connect()
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
		}()
	}
	l := &frameLoop{p: p, seq: peerISN + 1, ack: p.irs + 1,
		src: tcpip.AddrFromSlice(p.local.Addr().AsSlice()), dst: tcpip.AddrFromSlice(p.remote.Addr().AsSlice())}
	tcpLen := header.TCPMinimumSize + loopMsg
	ipLen := header.IPv4MinimumSize + tcpLen
	l.tmpl = make([]byte, header.EthernetMinimumSize+ipLen)
	header.Ethernet(l.tmpl).Encode(&header.EthernetFields{SrcAddr: p.peerMAC, DstAddr: p.stackMAC, Type: header.IPv4ProtocolNumber})
	ip := header.IPv4(l.tmpl[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(ipLen), TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: l.src, DstAddr: l.dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	header.TCP(ip[header.IPv4MinimumSize:]).Encode(&header.TCPFields{
		SrcPort: p.local.Port(), DstPort: p.remote.Port(),
		DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagAck | header.TCPFlagPsh, WindowSize: 65535,
	})
	return l
}

// quietTB drops the scripted peer's per-segment logs.
type quietTB struct{ testing.TB }

func (quietTB) Logf(string, ...any) {}

// round sends one request and waits for its echo; it fails if none comes
// within a few seconds.
func (l *frameLoop) round() {
	w := l.p.wire
	addr, ok := w.Alloc()
	if !ok {
		l.p.t.Fatal("frame loop: no free frame on the wire")
	}
	f := w.Frame(addr)[:len(l.tmpl)]
	copy(f, l.tmpl)
	tcp := header.TCP(f[header.EthernetMinimumSize+header.IPv4MinimumSize:])
	binary.BigEndian.PutUint32(tcp[4:], uint32(l.seq))
	binary.BigEndian.PutUint32(tcp[8:], uint32(l.ack))
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, l.src, l.dst, uint16(len(tcp)))
	tcp.SetChecksum(^checksum.Checksum(tcp, xsum))
	l.tx[0] = xsk.Desc{Addr: addr, Len: uint32(len(f))}
	if w.Enqueue(l.tx[:]) != 1 {
		l.p.t.Fatal("frame loop: the wire's ring is full")
	}
	w.Kick()
	l.seq += loopMsg
	got := 0
	var deadline time.Time
	for spins := 0; got < loopMsg; spins++ {
		n := w.Receive(l.rx[:])
		for i := 0; i < n; i++ {
			fr := w.Data(l.rx[i])
			if len(fr) < header.EthernetMinimumSize+header.IPv4MinimumSize+header.TCPMinimumSize {
				continue
			}
			ip := header.IPv4(fr[header.EthernetMinimumSize:])
			if ip.Protocol() != uint8(header.TCPProtocolNumber) {
				continue
			}
			t := header.TCP(ip.Payload())
			if pl := len(t.Payload()); pl > 0 && seqnum.Value(t.SequenceNumber()) == l.ack {
				l.ack += seqnum.Value(pl)
				got += pl
			}
		}
		w.Recycle(l.rx[:n])
		if n == 0 {
			// The server's worker may share this P (AllocsPerRun runs
			// at GOMAXPROCS 1).
			runtime.Gosched()
		}
		if n == 0 && spins%1024 == 1023 {
			if deadline.IsZero() {
				deadline = time.Now().Add(scriptWait)
			} else if time.Now().After(deadline) {
				l.p.t.Fatalf("frame loop: no echo within %v", scriptWait)
			}
		}
	}
}

// TestMemFrameLoopAllocs: request frame in, reply frame out, on both APIs:
// no allocation anywhere (the peer's loop allocates nothing either). With
// Config.Debug.NoFastPath too, the comparisons' baseline: each reply there once
// made a frame template and dropped it.
func TestMemFrameLoopAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	for _, v := range frameLoopVariants {
		t.Run(v.name, func(t *testing.T) {
			l := newFrameLoop(t, v.handler, v.config(false))
			for i := 0; i < 200; i++ {
				l.round()
			}
			if n := testing.AllocsPerRun(2000, l.round); n > 0.01 {
				t.Fatalf("%.2f allocations per request, want 0", n)
			}
			if f := l.p.s.Stats().FastPath.Owned; v.owned() && (f.Flows != 1 || f.SegmentsIn < 2000) {
				t.Fatalf("the owned fast path did not carry the connection: %+v", f)
			}
		})
	}
}

// frameLoopVariants are the servers the frame loop runs: a handler on the
// owned fast path (the default), on netstack's fast path
// (handler-netstack: Config.Debug.NetstackFastPath), and with no fast path
// (nofastpath: Config.NoFastPath, the before of both); the same for a
// net.Conn server, which the owned fast path does not carry.
var frameLoopVariants = []frameLoopVariant{
	{"net.Conn", false, false, false}, {"handler", true, false, false}, {"handler-netstack", true, true, false},
	{"net.Conn-nofastpath", false, false, true}, {"handler-nofastpath", true, false, true},
}

type frameLoopVariant struct {
	name                      string
	handler, netstack, noFast bool
}

// owned reports whether the variant's connection is the owned fast
// path's.
func (v frameLoopVariant) owned() bool { return v.handler && !v.netstack && !v.noFast }

func (v frameLoopVariant) config(trace bool) func(*Config) {
	return func(c *Config) {
		c.Poll, c.Trace, c.Debug.NoFastPath, c.Debug.NetstackFastPath = Spin, trace, v.noFast, v.netstack
	}
}

// BenchmarkMemFrameLoop times a request through one ustack server, and
// reports the server's own part (request frame off the RX ring → reply on
// the TX ring, p50: rx→txring-µs) from its latency breakdown.
//
// The handler-netstack and nofastpath variants (frameLoopVariants) are
// the owned fast path's and netstack's fast path's befores, in one run.
func BenchmarkMemFrameLoop(b *testing.B) {
	for _, v := range frameLoopVariants {
		b.Run(v.name, func(b *testing.B) {
			l := newFrameLoop(b, v.handler, v.config(true))
			for i := 0; i < 1000; i++ {
				l.round()
			}
			l.p.s.ResetTrace()
			busy0, kicks0 := l.p.s.Stats().WorkerTime()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l.round()
			}
			b.StopTimer()
			busy, kicks := l.p.s.Stats().WorkerTime()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/req")
			// The worker's time at work per request, kicks apart (the
			// wire's kick is the peer's, not the server's work).
			b.ReportMetric(float64((busy-busy0)-(kicks-kicks0))/float64(b.N)/1e3, "worker-µs/req")
			for _, st := range l.p.s.Stats().Trace.Stages {
				if st.Count > 0 {
					b.ReportMetric(float64(st.P50.Nanoseconds())/1e3, strings.ReplaceAll(st.Stage.String(), " ", "")+"-µs")
				}
			}
		})
	}
}
