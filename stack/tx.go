package stack

import (
	"runtime"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
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
func (e *endpoint) WritePacket(pkt *gstack.PacketBuffer) tcpip.Error {
	one := [1]*gstack.PacketBuffer{pkt}
	_, err := e.write(one[:])
	return err
}

// WritePackets implements gstack.LinkWriter. It copies each packet into a
// UMEM frame of the queue the first packet's flow hash selects, and kicks
// once for the batch. It does not take ownership of pkts.
func (e *endpoint) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	return e.write(pkts.AsSlice())
}

func (e *endpoint) write(all []*gstack.PacketBuffer) (int, tcpip.Error) {
	if len(all) == 0 {
		return 0, nil
	}
	q := e.queues[0]
	if len(e.queues) > 1 {
		q = e.queues[all[0].Hash%uint32(len(e.queues))]
	}
	sent, stalls := 0, 0
	for sent < len(all) {
		n := e.writeBatch(q, all[sent:])
		if n == 0 {
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
		sent += n
	}
	switch {
	case sent == 0:
	case q.io.TxQueued() >= batchSize:
		// A full batch is waiting: send it now rather than after the
		// worker's next turn.
		q.kickQueued()
	case q.spinning.Load():
		// The spinning worker kicks at the top of its next loop, once
		// for everything writers queued meanwhile: after a delivery it
		// yields to the readied goroutines first, so their replies
		// leave in one batch.
		q.kickIfWorkerStopped()
	default:
		q.kickQueued()
	}
	q.txPackets.Add(uint64(sent))
	if sent == 0 {
		q.txNoFrame.Add(1)
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	return sent, nil
}

// kickQueued kicks for packets WritePackets has already put on the TX
// ring. A failed kick does not unsend them: they stay queued for the next
// kick (the worker's, or the next writer's), so it is not reported to
// netstack, which would otherwise count queued packets as lost.
func (q *queue) kickQueued() { _ = q.kick() }

// writeBatch copies up to batchSize packets into frames, enqueues them,
// and returns how many of pkts it consumed (queued, or dropped as
// oversize); 0 when no frame or TX slot was free.
func (e *endpoint) writeBatch(q *queue, pkts []*gstack.PacketBuffer) int {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	// Reap sent frames every batch (one shared-memory load when there
	// are none), so frames and completion slots never run short.
	q.io.Complete()
	descs := q.txDescs[:0]
	consumed := 0
	for _, pkt := range pkts {
		if len(descs) == batchSize {
			break
		}
		addr, ok := q.io.Alloc()
		if !ok {
			// Reap what the kernel has sent and try once more.
			if q.io.Complete() == 0 {
				break
			}
			if addr, ok = q.io.Alloc(); !ok {
				break
			}
		}
		q.txPkt[len(descs)] = consumed
		consumed++
		frame := q.io.Frame(addr)
		if pkt.Size() > len(frame) {
			// Netstack segments to the MTU, so this cannot happen
			// short of a bug; drop rather than truncate.
			q.io.Free(addr)
			q.txOversize.Add(1)
			continue
		}
		descs = append(descs, xsk.Desc{Addr: addr, Len: uint32(copyPacket(frame, pkt))})
	}
	if t := q.trace; t != nil && len(descs) > 0 {
		// Before Enqueue: once a frame is on the ring, a kick may
		// take it before this goroutine gets to note it.
		t.mark(StageTxRing)
	}
	n := q.io.Enqueue(descs)
	for _, d := range descs[n:] {
		q.io.Free(d.Addr)
	}
	if n < len(descs) {
		// TX ring full: the packets from descs[n] on were not sent.
		return q.txPkt[n]
	}
	return consumed
}

// copyPacket copies pkt's bytes into frame and returns how many.
func copyPacket(frame []byte, pkt *gstack.PacketBuffer) int {
	views, off := pkt.AsViewList()
	w := 0
	for v := views.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if off >= len(b) {
			off -= len(b)
			continue
		}
		w += copy(frame[w:], b[off:])
		off = 0
	}
	return w
}
