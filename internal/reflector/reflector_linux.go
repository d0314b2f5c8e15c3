package reflector

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/offload"
	"github.com/ustack-dev/ustack/xsk"
)

const (
	etherTypeIPv4 = 0x0800
	etherTypeARP  = 0x0806
)

// Responder is the reflector's packet logic, apart from any socket: it
// rewrites a received frame in place into its reply. The benchmark's
// floor-asavie drives it over another AF_XDP library, so the two floors
// differ only in the socket code. Its counters may be read while it runs.
type Responder struct {
	MAC net.HardwareAddr
	IP  [4]byte
	// OnUDP, if set, is called with each UDP payload before it is sent
	// back; the slice aliases the frame and is valid only during the call.
	OnUDP func(payload []byte)

	ARPs, UDP, TCP, BadChecksums, Ignored atomic.Int64
}

// Reflector answers on one socket of package xsk.
type Reflector struct {
	Responder
	Sock *xsk.Socket
	// Spin busy-polls; otherwise the reflector sleeps 20µs when idle.
	Spin bool
	// Delay, if set, is busy-waited before each batch of replies is sent:
	// a stand-in for a server's processing time, with which the benchmark
	// shows how a client's round trip depends on it.
	Delay time.Duration
}

// Done reports whether a reflector loop should end: stop is closed or the
// deadline has passed. Loops call it every few hundred polls.
func Done(stop <-chan struct{}, deadline time.Time) bool {
	select {
	case <-stop:
		return true
	default:
	}
	return time.Now().After(deadline)
}

// Run serves until stop is closed or limit passes (a bound for tests and
// benchmarks that forget to stop it).
func (r *Reflector) Run(stop <-chan struct{}, limit time.Duration) {
	descs := make([]xsk.Desc, 64)
	tx := make([]xsk.Desc, 0, 64)
	drop := make([]xsk.Desc, 0, 64)
	deadline := time.Now().Add(limit)
	u := r.Sock.UMEM()
	for idle := 0; ; idle++ {
		if idle%256 == 0 && Done(stop, deadline) {
			return
		}
		r.Sock.CompleteToFill()
		n := r.Sock.Receive(descs)
		if n == 0 {
			r.Sock.Refill()
			if !r.Spin {
				time.Sleep(20 * time.Microsecond)
			}
			continue
		}
		idle = 0
		tx, drop = tx[:0], drop[:0]
		for _, d := range descs[:n] {
			if r.Handle(u.Data(d)) {
				tx = append(tx, d)
			} else {
				drop = append(drop, d)
			}
		}
		r.Sock.Recycle(drop)
		if r.Delay > 0 {
			for t0 := time.Now(); time.Since(t0) < r.Delay; {
			}
		}
		sent, err := r.Sock.Transmit(tx)
		if err != nil || sent < len(tx) {
			r.Sock.Recycle(tx[sent:])
		}
	}
}

// Handle rewrites the frame f in place into its reply and reports whether
// to send it: an ARP reply to a request for IP, or a UDP datagram back to
// its sender.
func (r *Responder) Handle(f []byte) bool {
	if len(f) < 14 {
		r.Ignored.Add(1)
		return false
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case etherTypeARP:
		a := f[14:]
		if len(a) < 28 || binary.BigEndian.Uint16(a[6:]) != 1 || !bytes.Equal(a[24:28], r.IP[:]) {
			r.Ignored.Add(1)
			return false
		}
		r.ARPs.Add(1)
		copy(f[0:6], f[6:12])
		copy(f[6:12], r.MAC)
		binary.BigEndian.PutUint16(a[6:], 2) // reply
		var spa [4]byte
		copy(spa[:], a[14:18])
		copy(a[18:24], a[8:14]) // target: the requester
		copy(a[24:28], spa[:])
		copy(a[8:14], r.MAC)
		copy(a[14:18], r.IP[:])
		return true
	case etherTypeIPv4:
		ip := f[14:]
		if len(ip) < 20 || ip[9] != 17 {
			r.Ignored.Add(1)
			return false
		}
		ihl := int(ip[0]&0xf) * 4
		if len(ip) < ihl+8 {
			r.Ignored.Add(1)
			return false
		}
		udp := ip[ihl:]
		ulen := int(binary.BigEndian.Uint16(udp[4:]))
		if ulen < 8 || ulen > len(udp) {
			r.Ignored.Add(1)
			return false
		}
		switch offload.Verify(f) {
		case offload.Partial:
			// A veth peer with TX checksum offload on (the default)
			// leaves the checksum for the device: finish it, or the
			// peer drops the reflected datagram.
			binary.BigEndian.PutUint16(udp[6:], 0)
			sum := ChecksumUDP4(ip[12:16], ip[16:20], udp[:ulen])
			if sum == 0 {
				sum = 0xffff
			}
			binary.BigEndian.PutUint16(udp[6:], sum)
		case offload.Invalid:
			r.BadChecksums.Add(1)
		}
		if r.OnUDP != nil {
			r.OnUDP(udp[8:ulen])
		}
		r.UDP.Add(1)
		// Swapping addresses and ports leaves both checksums valid.
		swapAddrs(f)
		var port [2]byte
		copy(port[:], udp[0:2])
		copy(udp[0:2], udp[2:4])
		copy(udp[2:4], port[:])
		return true
	}
	r.Ignored.Add(1)
	return false
}

// swapAddrs swaps the Ethernet frame f's MAC addresses and its IPv4
// header's source and destination, turning a received frame back to its
// sender.
func swapAddrs(f []byte) {
	var mac [6]byte
	copy(mac[:], f[0:6])
	copy(f[0:6], f[6:12])
	copy(f[6:12], mac[:])
	ip := f[ethLen:]
	var a [4]byte
	copy(a[:], ip[12:16])
	copy(ip[12:16], ip[16:20])
	copy(ip[16:20], a[:])
}

// ChecksumUDP4 returns the UDP checksum over the IPv4 pseudo-header and
// udp; 0 means a datagram with a valid checksum.
func ChecksumUDP4(src, dst, udp []byte) uint16 {
	return ^offload.Fold(offload.Sum(udp, offload.PseudoHeader4(src, dst, 17, len(udp))))
}
