package reflector

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/xsk"
	"golang.org/x/sys/unix"
)

// MaxStream bounds a stream the floor's source sends, whatever its
// request asks for.
const MaxStream = time.Minute

// Floor is the echo benchmark's floor server: a raw AF_XDP responder on
// one socket with no TCP/IP stack, doing the least work each workload
// needs. It answers ARP for its address and, by UDP destination port:
//
//	Port     echo: each datagram goes back to its sender, rewritten in
//	         place (Responder.Handle): the ping-pong floor; and TCP's
//	         echo on the same port number, without connection state
//	         (Responder.Reply): the floor of a TCP ping-pong;
//	Port+1   sink: each datagram is counted and its frame recycled: the
//	         floor of receiving what a kernel sends as fast as it can;
//	Port+2   source: a datagram whose payload holds a big-endian uint64
//	         of nanoseconds starts a stream of MTU-sized datagrams back
//	         to its sender for that long (at most MaxStream): the floor
//	         of transmitting to a kernel that only counts.
//
// On the same two ports TCP has a sink and a source for a kernel TCP
// client, speaking the bulk workloads' protocols with a few numbers of
// state a flow (see bulkTCP): the floors of a kernel TCP client's bulk
// transfer each way. They take single-frame segments only: above a
// 3506-byte MTU they answer nothing.
//
// Everything else is dropped. One goroutine runs it (Run); Sink and
// ResetSink may be called from others.
type Floor struct {
	Responder
	Sock *xsk.Socket
	Port uint16
	// MTU sizes the source's datagrams (default 1500).
	MTU int
	// Spin busy-polls; otherwise the floor sleeps 20µs when idle.
	Spin bool
	// YieldEvery, if positive, makes a spinning floor yield its OS
	// thread (sched_yield) every YieldEvery empty polls, as ustack's
	// workers do every 256, letting other threads runnable on its CPU
	// in. Off by default: on a shared machine the yield hands the CPU
	// to whatever else is runnable there, and the floor's round trip
	// doubled with it (BenchmarkPrivilegedPingPong).
	YieldEvery int
	// Delay is busy-waited before each batch of echo replies (see
	// Reflector.Delay).
	Delay time.Duration
	// Fresh makes the TCP echo answer data as a TCP must: the payload
	// copied into a fresh frame from the transmit pool behind headers
	// from the flow's template (with the timestamp option when the
	// client sends one), the TCP checksum computed in the copy, and the
	// received frame recycled. Without it data is echoed in place, which
	// no TCP can do. Set it before Run.
	Fresh bool
	// Copied counts TCP echoes sent from fresh frames (Fresh).
	Copied atomic.Int64
	// TCPBulk counts the TCP sink's and source's work.
	TCPBulk TCPBulkStats

	sinkFrames, sinkBytes, sinkFirst, sinkLast atomic.Int64
}

// SinkStats is what the floor's sink received since the last reset.
type SinkStats struct {
	Frames int64 `json:"frames"`
	Bytes  int64 `json:"bytes"` // UDP payload bytes
	// First and Last are when the first and the last batch holding sink
	// datagrams came off the RX ring (zero before any).
	First, Last time.Time
}

// Count returns the counts with the seconds from the first batch to the
// last.
func (s SinkStats) Count() Count {
	return Count{Frames: s.Frames, Bytes: s.Bytes, Seconds: s.Last.Sub(s.First).Seconds()}
}

// Sink returns the sink's counters.
func (f *Floor) Sink() SinkStats {
	s := SinkStats{Frames: f.sinkFrames.Load(), Bytes: f.sinkBytes.Load()}
	if t := f.sinkFirst.Load(); t != 0 {
		s.First, s.Last = time.Unix(0, t), time.Unix(0, f.sinkLast.Load())
	}
	return s
}

// ResetSink zeroes the sink's counters. Call it while no sink traffic
// flows: counts from a batch in progress may survive it.
func (f *Floor) ResetSink() {
	f.sinkFirst.Store(0)
	f.sinkLast.Store(0)
	f.sinkFrames.Store(0)
	f.sinkBytes.Store(0)
}

// Run serves until stop is closed or limit passes.
func (f *Floor) Run(stop <-chan struct{}, limit time.Duration) {
	descs := make([]xsk.Desc, 64)
	tx := make([]xsk.Desc, 0, 64)    // received frames answered in place
	fresh := make([]xsk.Desc, 0, 64) // transmit frames (Fresh)
	drop := make([]xsk.Desc, 0, 64)
	var flows *freshFlows
	inChain := false // the last frame received had OptContd
	if f.Fresh {
		flows = new(freshFlows)
	}
	mtu := f.MTU
	if mtu == 0 {
		mtu = 1500
	}
	bulk := newBulkTCP(&f.Responder, &f.TCPBulk, f.Port, mtu)
	// owed holds, per flow of the TCP sink or source owed an ACK in this
	// batch, the last of its frames, which carries the ACK back.
	type owedAck struct {
		fl *bulkFlow
		d  xsk.Desc
	}
	owed := make([]owedAck, 0, 64)
	start := time.Now()
	deadline := start.Add(limit)
	u := f.Sock.UMEM()
	for idle := 0; ; idle++ {
		if idle%256 == 0 && Done(stop, deadline) {
			return
		}
		if f.Fresh {
			// Sent frames of both kinds go to the transmit pool;
			// balance() gives receiving back those it lent.
			f.Sock.Complete()
		} else {
			f.Sock.CompleteToFill()
		}
		n := f.Sock.Receive(descs)
		if n == 0 {
			f.Sock.Refill()
			switch {
			case !f.Spin:
				time.Sleep(20 * time.Microsecond)
			case f.YieldEvery > 0 && idle%f.YieldEvery == f.YieldEvery-1:
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
			continue
		}
		idle = 0
		tx, fresh, drop, owed = tx[:0], fresh[:0], drop[:0], owed[:0]
		var sunk, sunkBytes int64
		var stream udp4
		var streamFor time.Duration
		var source *bulkFlow // a TCP source flow whose request came
		var tsNow uint32
		if f.Fresh {
			// One clock read a batch: a millisecond TCP timestamp
			// clock, as Linux's.
			tsNow = uint32(time.Since(start)/time.Millisecond) + 1
		}
		for _, d := range descs[:n] {
			fr := u.Data(d)
			if head := !inChain; inChain || d.Options&xsk.OptContd != 0 {
				// A datagram in a chain of frames (multi-buffer):
				// counted at its head if it is for the sink,
				// dropped whole otherwise.
				inChain = d.Options&xsk.OptContd != 0
				if head {
					if _, dst, m, ok := udpHead(fr); ok && dst == netip.AddrPortFrom(f.ip(), f.Port+1) {
						sunk++
						sunkBytes += int64(m)
					}
				}
				drop = append(drop, d)
				continue
			}
			p, ok := parseUDP4(fr)
			switch {
			case ok && p.dst.Addr() == f.ip() && p.dst.Port() == f.Port+1:
				sunk++
				sunkBytes += int64(len(p.payload))
				drop = append(drop, d)
				continue
			case ok && p.dst.Addr() == f.ip() && p.dst.Port() == f.Port+2:
				if len(p.payload) >= 8 {
					stream = p
					stream.srcMAC = append([]byte(nil), p.srcMAC...)
					streamFor = min(time.Duration(binary.BigEndian.Uint64(p.payload)), MaxStream)
				}
				drop = append(drop, d)
				continue
			}
			if port, isTCP := tcpDstPort(fr); !ok && isTCP && bulk.ports(port) {
				s, good := parseTCP4(fr)
				if !good {
					bulk.stats.Ignored.Add(1)
					drop = append(drop, d)
					continue
				}
				whole := u.Frame(d.Addr)
				m, fl := bulk.input(whole[d.Addr&uint64(len(whole)-1):], s)
				switch {
				case m > 0:
					d.Len = uint32(m)
					tx = append(tx, d)
				case fl != nil:
					i := 0
					for i < len(owed) && owed[i].fl != fl {
						i++
					}
					if i == len(owed) {
						owed = append(owed, owedAck{fl: fl, d: d})
					} else {
						drop = append(drop, owed[i].d)
						owed[i].d = d
					}
				default:
					drop = append(drop, d)
				}
				if fl != nil && fl.source && fl.streamFor > 0 && !fl.started {
					source = fl
				}
				continue
			}
			if flows != nil && !ok && len(fr) > ethLen+ipv4Len && fr[ethLen+9] == protoTCP {
				a, have := f.Sock.Alloc()
				if !have {
					f.Sock.Complete()
					a, have = f.Sock.Alloc()
				}
				if have {
					m := flows.replyFresh(&f.Responder, fr, u.Frame(a), tsNow)
					if m >= 0 {
						if m > 0 {
							fresh = append(fresh, xsk.Desc{Addr: a, Len: uint32(m)})
						} else {
							f.Sock.Free(a)
						}
						drop = append(drop, d)
						continue
					}
					f.Sock.Free(a)
				}
			}
			// The frame with the room after it, for a reply longer
			// than the request (Reply).
			whole := u.Frame(d.Addr)
			off := d.Addr & uint64(len(whole)-1)
			if m := f.Reply(whole[off : off+uint64(d.Len)]); m > 0 {
				d.Len = uint32(m)
				tx = append(tx, d)
			} else {
				drop = append(drop, d)
			}
		}
		// One cumulative ACK a flow a batch, over its last frame.
		for _, o := range owed {
			whole := u.Frame(o.d.Addr)
			if m := o.fl.writeAck(whole[o.d.Addr&uint64(len(whole)-1):]); m > 0 {
				o.d.Len = uint32(m)
				tx = append(tx, o.d)
			} else {
				drop = append(drop, o.d)
			}
		}
		if sunk > 0 {
			now := time.Now().UnixNano()
			f.sinkFirst.CompareAndSwap(0, now)
			f.sinkLast.Store(now)
			f.sinkFrames.Add(sunk)
			f.sinkBytes.Add(sunkBytes)
		}
		f.Sock.Recycle(drop)
		if len(tx)+len(fresh) > 0 {
			if f.Delay > 0 {
				for t0 := time.Now(); time.Since(t0) < f.Delay; {
				}
			}
			sent := f.Sock.Enqueue(tx)
			f.Sock.Recycle(tx[sent:])
			if f.Fresh {
				f.balance(sent)
			}
			f.Copied.Add(int64(len(fresh)))
			q := f.Sock.Enqueue(fresh)
			for _, d := range fresh[q:] {
				f.Sock.Free(d.Addr)
			}
			f.Sock.Kick()
		}
		if streamFor > 0 {
			f.stream(stream, streamFor, stop, deadline)
		}
		if source != nil {
			f.streamTCP(bulk, source, stop, deadline)
		}
	}
}

// balance gives receiving n frames from the transmit pool: in Fresh mode
// every sent frame comes back to the transmit pool, so each received
// frame answered in place (ARP, UDP, a SYN) is paid back, or the fill
// ring would run dry.
func (f *Floor) balance(n int) {
	var one [1]xsk.Desc
	f.Sock.Complete()
	for range n {
		a, ok := f.Sock.Alloc()
		if !ok {
			return
		}
		one[0].Addr = a
		f.Sock.Recycle(one[:])
	}
}

func (f *Floor) ip() netip.Addr { return netip.AddrFrom4(f.IP) }

// stream sends MTU-sized datagrams to req's sender for d: each a copy of
// one template into transmit frames (a chain of them above a 3506-byte
// MTU), a TX ring's worth to a kick, as a stack's transmit path would
// write them (sendLoop).
func (f *Floor) stream(req udp4, d time.Duration, stop <-chan struct{}, deadline time.Time) {
	mtu := f.MTU
	if mtu == 0 {
		mtu = 1500
	}
	payload := make([]byte, MaxUDPPayload(mtu))
	for i := range payload {
		payload[i] = byte(i)
	}
	tmpl := make([]byte, udpFrame+len(payload))
	n := writeUDP4(tmpl, req.srcMAC, f.MAC, netip.AddrPortFrom(f.ip(), f.Port+2), req.src, payload)
	tmpl = tmpl[:n]
	// Reflected frames go back to receiving before the transmit pool is
	// used for the stream, whose frames come back through Complete
	// (sendLoop waits for them all).
	if !f.Fresh {
		f.Sock.CompleteToFill()
	}
	until := time.Now().Add(d)
	sendLoop(f.Sock, tmpl, true, func() bool { return time.Now().After(until) || Done(stop, deadline) })
}

// FloorConfig configures StartFloor.
type FloorConfig struct {
	// Interface is the link to serve, in the calling thread's namespace.
	Interface string
	// Addr is the IPv4 address the floor answers for.
	Addr netip.Addr
	// Port is the echo port; the sink and source are on the next two.
	Port uint16
	// Delay is Floor.Delay.
	Delay time.Duration
	// Fresh is Floor.Fresh: the TCP echo copies into fresh frames.
	Fresh bool
	// YieldEvery is Floor.YieldEvery (0: never yield).
	YieldEvery int
}

// StartFloor opens an AF_XDP socket on queue 0 of the interface (in the
// calling thread's namespace), steers cfg.Addr's ARP, its three UDP ports
// and its TCP echo port to it with ustack's XDP program in native mode,
// and runs a spinning Floor on it. Above a 3506-byte MTU the socket is
// multi-buffer: the sink and the source take and send datagrams as chains
// of frames (the echoes answer single frames only). The returned function stops the
// floor and releases everything; on error nothing is left behind.
func StartFloor(cfg FloorConfig) (_ *Floor, stop func(), err error) {
	ifc, err := xsk.LookupInterface(cfg.Interface)
	if err != nil {
		return nil, nil, err
	}
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	// Receive frames for the sink as deep as ustack's (bulkRxFrames), and
	// the default transmit pool.
	umem, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: bulkRxFrames + xsk.DefaultRingSize})
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() { umem.Close() })
	sock, err := xsk.Open(umem, xsk.Config{Interface: cfg.Interface, MultiBuffer: needsMultiBuffer(ifc.MTU), RxSize: bulkRxFrames, FillSize: bulkRxFrames})
	if err != nil {
		return nil, nil, err
	}
	undo = append(undo, func() { sock.Close() })
	s := bpf.Steering{Ifindex: ifc.Index, Mode: bpf.AttachNative, Sockets: []int{sock.FD()},
		Owned: []bpf.Owned{{Addr: cfg.Addr, Flags: bpf.OwnNeigh}}}
	for i := range uint16(3) {
		s.Ports = append(s.Ports, bpf.OwnedPort{Addr: cfg.Addr, Proto: bpf.UDP, Port: cfg.Port + i},
			bpf.OwnedPort{Addr: cfg.Addr, Proto: bpf.TCP, Port: cfg.Port + i})
	}
	prog, _, err := bpf.Setup(s)
	if err != nil {
		return nil, nil, fmt.Errorf("steer %s to the floor: %w", ifc.Name, err)
	}
	undo = append(undo, func() { prog.Close() })
	f := &Floor{Responder: Responder{MAC: ifc.MAC, IP: cfg.Addr.As4()}, Sock: sock, Port: cfg.Port, MTU: ifc.MTU, Spin: true, Delay: cfg.Delay, Fresh: cfg.Fresh, YieldEvery: cfg.YieldEvery}
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		// One thread for the spinning loop, as ustack's workers have:
		// the goroutine is never moved between threads.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		f.Run(quit, 24*time.Hour)
	}()
	// The floor stops before its socket closes.
	undo = append(undo, func() { close(quit); <-done })
	return f, cleanup, nil
}
