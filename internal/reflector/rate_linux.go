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

// RateConfig configures Rate.
type RateConfig struct {
	// Interface is the client's link, in the calling thread's namespace.
	Interface string
	// Local is the client's IPv4 address; flow i uses UDP port
	// RateFirstPort+i.
	Local netip.Addr
	// Remote is the Floor's echo address and port.
	Remote netip.AddrPort
	// Flows is how many flows each keep one request in flight (1 to
	// MaxRateFlows).
	Flows int
	// Size is each request's UDP payload in bytes (4, the flow's
	// generation, to the MTU's MaxUDPPayload).
	Size int
	// Warmup is run before counting; Duration is counted (at most
	// MaxStream each).
	Warmup, Duration time.Duration
}

// RateFirstPort is the UDP port of Rate's first flow.
const RateFirstPort = 40000

// MaxRateFlows bounds RateConfig.Flows: every flow's request fits the
// transmit ring at once.
const MaxRateFlows = 512

// RateStall is how long a flow may wait for its reply before Rate sends
// its request again (the reply or the request was dropped, or the
// process was not scheduled).
const RateStall = 50 * time.Millisecond

// Rate drives a Floor's echo with cfg.Flows UDP flows from one AF_XDP
// socket, each keeping one request of cfg.Size bytes in flight: the
// request-rate ceiling of raw AF_XDP at both ends. It receives replies in
// batches and answers each with its flow's next request in the same
// frame, rewritten in place (addresses and ports swapped, which keeps the
// checksums valid: the least work a next request can cost), one kick per
// batch. It returns the replies counted during cfg.Duration after
// cfg.Warmup and the time they were counted over. A flow whose reply is
// RateStall late is sent again with its generation (the payload's first
// four bytes) advanced, and replies of an older generation are dropped,
// so each flow keeps exactly one request in flight. ctx cancels it; it
// never runs longer than Warmup+Duration plus the ARP resolution.
func Rate(ctx context.Context, cfg RateConfig) (count int64, elapsed time.Duration, err error) {
	if cfg.Flows < 1 || cfg.Flows > MaxRateFlows {
		return 0, 0, fmt.Errorf("rate: %d flows, want 1 to %d", cfg.Flows, MaxRateFlows)
	}
	if cfg.Warmup < 0 || cfg.Duration <= 0 || cfg.Warmup > MaxStream || cfg.Duration > MaxStream {
		return 0, 0, fmt.Errorf("rate: warm-up %v and duration %v, want each up to %v and a duration", cfg.Warmup, cfg.Duration, MaxStream)
	}
	ports := make([]bpf.OwnedPort, cfg.Flows)
	for i := range ports {
		ports[i] = bpf.OwnedPort{Addr: cfg.Local, Proto: bpf.UDP, Port: RateFirstPort + uint16(i)}
	}
	e, err := openEndpoint(cfg.Interface, cfg.Local, ports, cfg.Remote.Addr(), false)
	if err != nil {
		return 0, 0, fmt.Errorf("rate: %w", err)
	}
	defer e.close()
	if cfg.Size < 4 || cfg.Size > MaxUDPPayload(e.mtu) {
		return 0, 0, fmt.Errorf("rate: %d-byte requests, want 4 to %d", cfg.Size, MaxUDPPayload(e.mtu))
	}
	return e.rate(ctx, cfg)
}

// rate is Rate's loop on an open endpoint.
func (e *endpoint) rate(ctx context.Context, cfg RateConfig) (count int64, elapsed time.Duration, err error) {
	u := e.umem
	payload := make([]byte, cfg.Size)
	for i := range payload {
		payload[i] = byte(i)
	}
	// sent[i] is when flow i's request in flight went, in nanoseconds
	// from start.
	sent := make([]int64, cfg.Flows)
	gen := make([]uint32, cfg.Flows) // each flow's generation
	start := time.Now()
	// send writes flow i's request into a fresh transmit frame: at the
	// start and after a stall.
	send := func(i int, now int64) bool {
		a, ok := e.sock.Alloc()
		if !ok {
			e.sock.Complete()
			if a, ok = e.sock.Alloc(); !ok {
				return false
			}
		}
		src := netip.AddrPortFrom(cfg.Local, RateFirstPort+uint16(i))
		gen[i]++
		binary.BigEndian.PutUint32(payload, gen[i])
		n := writeUDP4(u.Frame(a), e.peer, e.mac, src, cfg.Remote, payload)
		e.one[0] = xsk.Desc{Addr: a, Len: uint32(n)}
		if e.sock.Enqueue(e.one[:]) == 0 {
			e.sock.Free(a)
			return false
		}
		sent[i] = now
		return true
	}
	for i := range sent {
		if !send(i, 0) {
			return 0, 0, errors.New("rate: transmit ring full at the start")
		}
	}
	if err := e.sock.Kick(); err != nil {
		return 0, 0, fmt.Errorf("rate: %w", err)
	}

	from, until := int64(cfg.Warmup), int64(cfg.Warmup+cfg.Duration)
	var stalls int64
	descs := make([]xsk.Desc, 64)
	tx := make([]xsk.Desc, 0, 64)
	drop := make([]xsk.Desc, 0, 64)
	lo, hi := RateFirstPort, RateFirstPort+cfg.Flows
	now, check := int64(0), int64(0)
	for idle := 0; ; idle++ {
		// Reflected frames (and the first requests) come back to
		// receiving.
		e.sock.CompleteToFill()
		n := e.sock.Receive(descs)
		if n == 0 {
			e.sock.Refill()
			if idle%64 != 0 {
				continue
			}
		}
		now = int64(time.Since(start))
		if now >= until {
			break
		}
		if now >= check {
			check = now + int64(10*time.Millisecond)
			if err := ctx.Err(); err != nil {
				return count, 0, err
			}
			for i, t := range sent {
				if now-t > int64(RateStall) && send(i, now) {
					stalls++
				}
			}
			e.sock.Kick()
		}
		if n == 0 {
			continue
		}
		idle = 0
		tx, drop = tx[:0], drop[:0]
		for _, d := range descs[:n] {
			f := u.Data(d)
			p, ok := parseUDP4(f)
			port := int(p.dst.Port())
			if !ok || p.src != cfg.Remote || p.dst.Addr() != cfg.Local || port < lo || port >= hi ||
				len(p.payload) < 4 || binary.BigEndian.Uint32(p.payload) != gen[port-lo] {
				drop = append(drop, d)
				continue
			}
			if now >= from {
				count++
			}
			sent[port-lo] = now
			// The reply, turned around, is the flow's next request.
			swapAddrs(f)
			udp := f[ethLen+int(f[ethLen]&0xf)*4:]
			udp[0], udp[1], udp[2], udp[3] = udp[2], udp[3], udp[0], udp[1]
			tx = append(tx, d)
		}
		e.sock.Recycle(drop)
		if len(tx) > 0 {
			q, err := e.sock.Transmit(tx)
			if q < len(tx) {
				e.sock.Recycle(tx[q:])
			}
			if err != nil {
				return count, 0, fmt.Errorf("rate: %w", err)
			}
		}
	}
	elapsed = time.Duration(now - from)
	if count == 0 {
		return 0, elapsed, fmt.Errorf("rate: no replies in %v (%d requests sent again)", cfg.Duration, stalls)
	}
	return count, elapsed, nil
}
