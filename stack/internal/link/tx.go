package link

import (
	"errors"
	"runtime"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/offload"
	"github.com/ustack-dev/ustack/stack/internal/trace"
	"github.com/ustack-dev/ustack/xsk"
)

// The TX path: netstack writes packets from any goroutine; each is copied
// once into a UMEM frame under the queue's TX lock and put on the TX ring.
// Who kicks is kick.go's business.

// maxTxStalls bounds how often WritePackets kicks and retries when it
// finds no free frame or TX slot before it gives up on the rest.
const maxTxStalls = 16

// WritePacket implements gstack.SinglePacketWriter: WritePackets for one
// packet, without a list.
func (e *Endpoint) WritePacket(pkt *gstack.PacketBuffer) tcpip.Error {
	one := [1]*gstack.PacketBuffer{pkt}
	_, err := e.write(one[:])
	return err
}

// WritePackets implements gstack.LinkWriter. It copies each packet into a
// UMEM frame of the queue the first packet's flow hash selects, and kicks
// once for the batch. It does not take ownership of pkts.
func (e *Endpoint) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	return e.write(pkts.AsSlice())
}

func (e *Endpoint) write(all []*gstack.PacketBuffer) (int, tcpip.Error) {
	if len(all) == 0 {
		return 0, nil
	}
	q := e.queues[0]
	if len(e.queues) > 1 {
		q = e.queues[all[0].Hash%uint32(len(e.queues))]
	}
	// at is the next frame to write: packet all[at.pkt], segment at.seg
	// (a GSO packet may take several batches).
	var at txPos
	stalls := 0
	frames0 := q.txFrames.Load()
	for at.pkt < len(all) {
		next := e.writeBatch(q, all[at.pkt:], at.seg)
		if next == (txPos{0, at.seg}) {
			// Out of frames or TX slots: what is queued must go first,
			// and it may be waiting for a kick left to the worker.
			if stalls == maxTxStalls {
				break
			}
			stalls++
			q.kick()
			runtime.Gosched()
			continue
		}
		at = txPos{at.pkt + next.pkt, next.seg}
	}
	sent := at.pkt
	if sent > 0 || at.seg > 0 {
		q.kickAfterWrite(q.txFrames.Load() - frames0)
	}
	q.txPackets.Add(uint64(sent))
	if sent == 0 {
		// A GSO packet of which only some segments went counts as not
		// sent: TCP retransmits the rest.
		q.txNoFrame.Add(1)
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	return sent, nil
}

// WriteFrame implements gstack.FrameWriter, the fast path's send (netstack's
// tcp sender writes a data segment's frame through it): one frame of hdr (Ethernet, IPv4 or IPv6, and TCP headers) and
// pkt's payload, copied once into a UMEM frame with the TCP checksum
// computed in the copy, on the queue hash selects. It does not take
// ownership of pkt.
func (e *Endpoint) WriteFrame(hdr []byte, pkt *gstack.PacketBuffer, hash uint32) tcpip.Error {
	q := e.queues[0]
	if len(e.queues) > 1 {
		q = e.queues[hash%uint32(len(e.queues))]
	}
	for stalls := 0; ; stalls++ {
		ok, err := e.writeFrame(q, hdr, pkt)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		if stalls == maxTxStalls {
			q.txNoFrame.Add(1)
			return &tcpip.ErrNoBufferSpace{}
		}
		// What is queued must go first, and it may be waiting for a
		// kick left to the worker.
		q.kick()
		runtime.Gosched()
	}
	q.txPackets.Add(1)
	q.kickAfterWrite(1)
	return nil
}

// writeFrame writes WriteFrame's frame under the TX lock; false if no
// frame or TX slot was free.
func (e *Endpoint) writeFrame(q *queue, hdr []byte, pkt *gstack.PacketBuffer) (bool, tcpip.Error) {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	q.io.Complete()
	addr, ok := q.allocFrame()
	if !ok {
		return false, nil
	}
	q.txViews = appendViews(q.txViews[:0], pkt)
	n, err := offload.WriteTCPFrame(q.io.Frame(addr), hdr, q.txViews)
	clear(q.txViews)
	if err != nil {
		q.io.Free(addr)
		q.txOversize.Add(1)
		if errors.Is(err, offload.ErrFrameTooSmall) {
			return false, &tcpip.ErrMessageTooLong{}
		}
		return false, &tcpip.ErrMalformedHeader{}
	}
	return q.enqueueOne(addr, n), nil
}

// txPos is a position in a list of packets being written: a packet's
// index and a segment of it.
type txPos struct{ pkt, seg int }

// writeBatch writes up to BatchSize frames, starting at segment seg of
// pkts[0], enqueues them, and returns where the next batch starts
// (packets dropped as unwritable count as written); the position it
// started from when no frame or TX slot was free.
func (e *Endpoint) writeBatch(q *queue, pkts []*gstack.PacketBuffer, seg int) txPos {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	// Reap sent frames every batch (one shared-memory load when there
	// are none), so frames and completion slots never run short.
	q.io.Complete()
	descs := q.txDescs[:0]
	at := txPos{0, seg}
	loaded := -1 // the packet q.tx holds
	for at.pkt < len(pkts) && len(descs) < BatchSize {
		if loaded != at.pkt {
			if err := e.loadTx(q, pkts[at.pkt]); err != nil {
				// Netstack built it, so this cannot happen short of a
				// bug; drop rather than send garbage.
				q.txOversize.Add(1)
				at = txPos{at.pkt + 1, 0}
				continue
			}
			loaded = at.pkt
		}
		addr, ok := q.allocFrame()
		if !ok {
			break
		}
		n, err := q.tx.WriteSegment(q.io.Frame(addr), at.seg)
		if err != nil {
			// Larger than a frame: netstack segments to the MTU
			// and to the MSS, so again a bug; drop, never truncate.
			q.io.Free(addr)
			q.txOversize.Add(1)
			at = txPos{at.pkt + 1, 0}
			continue
		}
		q.txPos[len(descs)] = at
		descs = append(descs, xsk.Desc{Addr: addr, Len: uint32(n)})
		if at.seg++; at.seg == q.tx.Segments() {
			at = txPos{at.pkt + 1, 0}
		}
	}
	n := q.enqueueTx(descs)
	if n < len(descs) {
		// TX ring full: the frames from descs[n] on were not sent.
		return q.txPos[n]
	}
	return at
}

// enqueueTx puts descs on the TX ring, frees the frames of those that did
// not fit and returns how many went. Under q.txMu.
func (q *queue) enqueueTx(descs []xsk.Desc) int {
	if t := q.trace; t != nil && len(descs) > 0 {
		// Before Enqueue: once a frame is on the ring, a kick may
		// take it before this goroutine gets to note it.
		t.Mark(trace.StageTxRing)
	}
	n := q.io.Enqueue(descs)
	for _, d := range descs[n:] {
		q.io.Free(d.Addr)
	}
	if n < len(descs) {
		q.txRingFull.Add(uint64(len(descs) - n))
	}
	q.txFrames.Add(uint64(n))
	return n
}

// enqueueOne puts the frame at addr, n bytes long, on the TX ring, or
// frees it if the ring is full. Under q.txMu.
func (q *queue) enqueueOne(addr uint64, n int) bool {
	q.txDescs[0] = xsk.Desc{Addr: addr, Len: uint32(n)}
	return q.enqueueTx(q.txDescs[:1]) == 1
}

// loadTx prepares q.tx for pkt: its bytes as netstack's views, where its
// transport header starts, and whether offload is to checksum it (TX
// checksum offload on: netstack left the field for us) and cut it
// (a GSO packet: its MSS).
func (e *Endpoint) loadTx(q *queue, pkt *gstack.PacketBuffer) error {
	q.txViews = appendViews(q.txViews[:0], pkt)
	var proto uint8
	var l4, mss int
	if e.txCsum {
		switch pkt.TransportProtocolNumber {
		case header.TCPProtocolNumber, header.UDPProtocolNumber:
			proto = uint8(pkt.TransportProtocolNumber)
			l4 = len(pkt.LinkHeader().Slice()) + len(pkt.NetworkHeader().Slice())
		}
		if g := &pkt.GSOOptions; g.Type == gstack.GSOTCPv4 || g.Type == gstack.GSOTCPv6 {
			mss = int(g.MSS)
		}
	}
	return q.tx.Reset(q.txViews, l4, proto, mss)
}

// appendViews appends pkt's bytes, as netstack's views, to dst.
func appendViews(dst [][]byte, pkt *gstack.PacketBuffer) [][]byte {
	views, off := pkt.AsViewList()
	for v := views.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if off >= len(b) {
			off -= len(b)
			continue
		}
		dst = append(dst, b[off:])
		off = 0
	}
	return dst
}

// allocFrame takes a free transmit frame, reaping what the kernel has
// sent and trying once more if none is free. Under the TX lock.
func (q *queue) allocFrame() (uint64, bool) {
	if addr, ok := q.io.Alloc(); ok {
		return addr, true
	}
	if q.io.Complete() == 0 {
		return 0, false
	}
	return q.io.Alloc()
}
