package reflector

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/xsk"
)

// The bulk floors with AF_XDP at both ends: BlastXDP into a Floor's sink,
// CountStreamXDP from its source. Above a 3506-byte MTU a datagram's
// frame no longer fits one UMEM frame beside the kernel's headroom (nor
// a page, for native XDP on veth), so floors and clients bind with
// multi-buffer AF_XDP (XDP_USE_SG) and a datagram is a chain of frames.

// pageMaxXDPMTU is the largest MTU whose frames native XDP on veth takes
// in one page, and an AF_XDP socket in one 4 KiB frame.
const pageMaxXDPMTU = 3506

// needsMultiBuffer reports whether an interface of mtu bytes needs
// multi-buffer sockets.
func needsMultiBuffer(mtu int) bool { return mtu > pageMaxXDPMTU }

// sendBatch is the least TX room the bulk senders ask for a kick, and the
// most frames one datagram's chain may span.
const sendBatch = 64

// sendLoop transmits copies of the frame tmpl from s's transmit pool
// until done reports true (asked every 16 kicks): each kick queues as many
// copies as the TX ring and the pool have room for (TxRoom reports all the
// room it knows of, not sendBatch: about 1024 descriptors a kick, which
// copy mode on Linux 6.18 sends in one call). With rewrite each copy is
// written into its frames as a stack's transmit path writes a datagram;
// without, a frame is written the first time it is used and sent as it
// stands after (every copy is the same), for a load generator that should
// cost its CPU no more than the kernel's TCP sender, which copies the
// payload once. A frame longer than a UMEM frame goes as a chain
// (OptContd). Whatever arrives meanwhile is recycled. It returns how many
// copies it queued, after waiting up to a second for their completions.
func sendLoop(s *xsk.Socket, tmpl []byte, rewrite bool, done func() bool) (int64, error) {
	u := s.UMEM()
	fs := int(u.Config().FrameSize)
	per := (len(tmpl) + fs - 1) / fs // descriptors a copy
	if per > sendBatch {
		return 0, fmt.Errorf("a %d-byte frame spans more than %d UMEM frames", len(tmpl), sendBatch)
	}
	// holds[frame] is 1 + which piece of tmpl the frame holds (0: none).
	var holds []uint8
	if !rewrite {
		holds = make([]uint8, u.Config().FrameCount)
	}
	batch := make([]xsk.Desc, 0, s.TxRoom(sendBatch))
	rx := make([]xsk.Desc, 64)
	var queued, completed int64
	var err error
	for i := 0; ; i++ {
		if i%16 == 0 && done() {
			break
		}
		completed += int64(s.Complete())
		batch = batch[:0]
		room := s.TxRoom(sendBatch) / per * per
	fill:
		for len(batch)+per <= room {
			for j := 0; j < per; j++ {
				a, ok := s.Alloc()
				if !ok {
					for _, d := range batch[len(batch)-j:] {
						s.Free(d.Addr)
					}
					batch = batch[:len(batch)-j]
					break fill
				}
				piece := tmpl[j*fs:]
				n := min(len(piece), fs)
				if f := a / uint64(fs); holds == nil || holds[f] != uint8(j+1) {
					copy(u.Frame(a), piece)
					if holds != nil {
						holds[f] = uint8(j + 1)
					}
				}
				d := xsk.Desc{Addr: a, Len: uint32(n)}
				if j < per-1 {
					d.Options = xsk.OptContd
				}
				batch = append(batch, d)
			}
		}
		// The room was reserved: every whole chain is taken.
		q := s.Enqueue(batch)
		for _, d := range batch[q:] {
			s.Free(d.Addr)
		}
		queued += int64(q / per)
		if err = s.Kick(); err != nil {
			break
		}
		if m := s.Receive(rx); m > 0 {
			s.Recycle(rx[:m])
		} else {
			s.Refill()
		}
	}
	for t0 := time.Now(); completed < queued*int64(per) && time.Since(t0) < time.Second; {
		s.Kick()
		completed += int64(s.Complete())
	}
	return queued, err
}

// BlastXDP sends UDP datagrams with size bytes of payload from local to
// remote (a Floor's sink) from an AF_XDP socket on queue 0 of iface (in
// the calling thread's namespace) as fast as the kernel takes them, for
// d: a TX ring's worth of datagrams a kick, each transmit frame written
// from one template the first time it is used (sendLoop). It returns how many it queued; the sink counts what
// arrives. With the Floor's sink this is the client→server bulk floor
// with AF_XDP at both ends. Above a 3506-byte MTU the socket is
// multi-buffer and each datagram a chain of frames. It takes at most d
// plus ARP resolution and a second to drain.
func BlastXDP(ctx context.Context, iface string, local, remote netip.AddrPort, size int, d time.Duration) (sent int64, err error) {
	ifc, err := xsk.LookupInterface(iface)
	if err != nil {
		return 0, err
	}
	if size < 1 || size > MaxUDPPayload(ifc.MTU) || d <= 0 || d > MaxStream {
		return 0, fmt.Errorf("blast: %d-byte datagrams for %v, want 1 to %d bytes and up to %v", size, d, MaxUDPPayload(ifc.MTU), MaxStream)
	}
	e, err := openEndpoint(iface, local.Addr(), []bpf.OwnedPort{{Addr: local.Addr(), Proto: bpf.UDP, Port: local.Port()}}, remote.Addr(), needsMultiBuffer(ifc.MTU))
	if err != nil {
		return 0, fmt.Errorf("blast: %w", err)
	}
	defer e.close()
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	tmpl := make([]byte, udpFrame+size)
	writeUDP4(tmpl, e.peer, e.mac, local, remote, payload)
	until := time.Now().Add(d)
	sent, err = sendLoop(e.sock, tmpl, false, func() bool { return ctx.Err() != nil || !time.Now().Before(until) })
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return sent, fmt.Errorf("blast: %w", err)
	}
	return sent, nil
}

// udpHead parses the headers of an Ethernet/IPv4/UDP frame that may be
// the first of a chain: the datagram's addresses and payload length,
// which may run past f.
func udpHead(f []byte) (src, dst netip.AddrPort, payload int, ok bool) {
	if len(f) < udpFrame || binary.BigEndian.Uint16(f[12:]) != etherTypeIPv4 {
		return src, dst, 0, false
	}
	ip := f[ethLen:]
	ihl := int(ip[0]&0xf) * 4
	if ip[0]>>4 != 4 || ihl < ipv4Len || ip[9] != 17 || len(ip) < ihl+udpLen {
		return src, dst, 0, false
	}
	udp := ip[ihl:]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < udpLen {
		return src, dst, 0, false
	}
	src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(udp[0:]))
	dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(udp[2:]))
	return src, dst, ulen - udpLen, true
}

// bulkRxFrames is how many frames the bulk floors' receivers (the Floor's
// sink, CountStreamXDP) receive into, with RX and fill rings as deep:
// ustack's default (stack.Config.RxRingSize). With 1024 a stall of the
// receiving thread of under 2 ms at 350-600k frames/s ran the fill ring
// dry and the kernel dropped the rest, on the sender's CPU, which had
// paid to send them.
const bulkRxFrames = 16384

// CountStreamXDP asks the Floor's source at remote for a stream of d and
// counts the datagrams from it that reach local, an AF_XDP socket on
// queue 0 of iface (in the calling thread's namespace), from the first
// to the last: batch receive, count, recycle. It is the server→client
// bulk floor with AF_XDP at both ends. The request goes again every
// 200 ms until the stream starts, for up to 2 s; after the first
// datagram, 100 ms without one ends the count, and it never reads past
// d plus a second. Above a 3506-byte MTU the socket is multi-buffer and
// a chain of frames counts as one datagram.
func CountStreamXDP(ctx context.Context, iface string, local, remote netip.AddrPort, d time.Duration) (Count, error) {
	ifc, err := xsk.LookupInterface(iface)
	if err != nil {
		return Count{}, err
	}
	if d <= 0 || d > MaxStream {
		return Count{}, fmt.Errorf("stream: %v, want up to %v", d, MaxStream)
	}
	e, err := openEndpointRx(iface, local.Addr(), []bpf.OwnedPort{{Addr: local.Addr(), Proto: bpf.UDP, Port: local.Port()}}, remote.Addr(), needsMultiBuffer(ifc.MTU), bulkRxFrames)
	if err != nil {
		return Count{}, fmt.Errorf("stream: %w", err)
	}
	defer e.close()
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], uint64(d))
	var r Count
	var first, last, asked time.Time
	descs := make([]xsk.Desc, 64)
	inChain := false // the last frame received had OptContd
	start := time.Now()
	for i := 0; ; i++ {
		if first.IsZero() {
			now := time.Now()
			if now.Sub(start) > 2*time.Second {
				return r, errors.New("stream: no datagrams from the floor's source in 2s")
			}
			if now.Sub(asked) > 200*time.Millisecond {
				e.sock.Complete()
				if a, ok := e.sock.Alloc(); ok {
					n := writeUDP4(e.umem.Frame(a), e.peer, e.mac, local, remote, req[:])
					e.one[0] = xsk.Desc{Addr: a, Len: uint32(n)}
					if q, _ := e.sock.Transmit(e.one[:]); q == 0 {
						e.sock.Free(a)
					}
				}
				asked = now
			}
		}
		n := e.sock.Receive(descs)
		if n == 0 {
			e.sock.Refill()
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return r, fmt.Errorf("stream: %w", err)
				}
				if now := time.Now(); !first.IsZero() && (now.Sub(last) > 100*time.Millisecond || now.Sub(first) > d+maxStreamSlack) {
					break
				}
			}
			continue
		}
		var frames, bytes int64
		for _, dc := range descs[:n] {
			head := !inChain
			inChain = dc.Options&xsk.OptContd != 0
			if !head {
				continue
			}
			src, dst, m, ok := udpHead(e.umem.Data(dc))
			if ok && src == remote && dst == local {
				frames++
				bytes += int64(m)
			}
		}
		e.sock.Recycle(descs[:n])
		if frames > 0 {
			last = time.Now()
			if first.IsZero() {
				// The interval starts with the first batch, which is
				// not counted (as CountStream's first datagram).
				first = last
				continue
			}
			r.Frames += frames
			r.Bytes += bytes
			if last.Sub(first) > d+maxStreamSlack {
				break
			}
		}
	}
	r.Seconds = last.Sub(first).Seconds()
	return r, nil
}
