package stack

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// tcpSegment is what the loss tests need of a frame on the memory wire.
type tcpSegment struct {
	srcPort, dstPort uint16
	seq              uint32
	payload          int
}

// parseTCP4 reads an Ethernet/IPv4/TCP frame; ok is false for anything
// else.
func parseTCP4(f []byte) (s tcpSegment, ok bool) {
	const eth = 14
	if len(f) < eth+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[eth+9] != 6 {
		return s, false
	}
	ihl := int(f[eth]&0xf) * 4
	total := int(binary.BigEndian.Uint16(f[eth+2:]))
	if len(f) < eth+ihl+20 || total > len(f)-eth {
		return s, false
	}
	tcp := f[eth+ihl : eth+total]
	doff := int(tcp[12]>>4) * 4
	if doff < 20 || doff > len(tcp) {
		return s, false
	}
	return tcpSegment{
		srcPort: binary.BigEndian.Uint16(tcp[0:]),
		dstPort: binary.BigEndian.Uint16(tcp[2:]),
		seq:     binary.BigEndian.Uint32(tcp[4:]),
		payload: len(tcp) - doff,
	}, true
}

// dropFirstSends returns a drop hook that discards the first transmission
// of the data segments to port whose sequence numbers drop chooses
// (relative to the first data segment seen), and lets every
// retransmission through.
func dropFirstSends(port uint16, drop func(rel uint32) bool) func([]byte) bool {
	var mu sync.Mutex
	var base uint32
	started := false
	seen := map[uint32]bool{}
	return func(f []byte) bool {
		s, ok := parseTCP4(f)
		if !ok || s.dstPort != port || s.payload == 0 {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if !started {
			base, started = s.seq, true
		}
		rel := s.seq - base
		if seen[rel] {
			return false
		}
		seen[rel] = true
		return drop(rel)
	}
}

// sendAndCheck writes data on c and checks that the server at the other
// end of the pair reads exactly data.
func sendAndCheck(t *testing.T, c net.Conn, got <-chan []byte, data []byte) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, data) {
			t.Fatalf("received %d bytes, want the %d sent", len(b), len(data))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("data did not arrive")
	}
}

// TestMemRACKLearnsFromRetransmission loses both segments of a two-segment
// write. The tail loss probe retransmits the second; its SACK must tell
// RACK that the first is lost, so the first is retransmitted at once
// rather than after the retransmission timeout. netstack used to ignore
// that SACK because its timestamp echo is older than the probe (the
// receiver echoes the last in-order segment's), and recovered by RTO.
func TestMemRACKLearnsFromRetransmission(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	const port = 5001
	// netstack's segments carry 1420 bytes on a 1500-byte MTU (room kept
	// for timestamps and SACK blocks); the write is two of them.
	const size = 2 * 1420
	mp.pa.setDrop(dropFirstSends(port, func(rel uint32) bool { return rel < size }))
	ln, err := mp.b.Listen("tcp", netip.AddrPortFrom(memB4.Addr(), port).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, size)
		if _, err := io.ReadFull(c, b); err == nil {
			got <- b
		}
	}()
	c, err := mp.a.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data := bytes.Repeat([]byte("rack"), size/4)
	before := mp.a.Stats()
	sendAndCheck(t, c, got, data)
	after := mp.a.Stats()
	if n := after.TCPTimeouts - before.TCPTimeouts; n != 0 {
		t.Errorf("recovered by %d retransmission timeouts; want RACK to find the loss from the probe's SACK", n)
	}
	if after.TCPRetransmits-before.TCPRetransmits < 2 {
		t.Errorf("%d retransmissions, want the probe and the first segment", after.TCPRetransmits-before.TCPRetransmits)
	}
}
