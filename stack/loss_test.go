package stack

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// tcpSegment is what the loss tests need of a frame on the memory wire.
type tcpSegment struct {
	srcPort, dstPort uint16
	seq, ack         uint32
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
		ack:     binary.BigEndian.Uint32(tcp[8:]),
		payload: len(tcp) - doff,
	}, true
}

// dropFirstSends returns a drop hook that discards the first transmission
// of the data segments to port whose sequence numbers drop chooses
// (relative to the first data segment seen), and lets every
// retransmission through.
func dropFirstSends(port uint16, drop func(rel uint32) bool) func([]byte) bool {
	return new(resends).wrap(port, drop)
}

// resends records, in order, the sequence numbers (relative to the first
// data frame) of the data frames to a port that were sent more than once.
type resends struct {
	mu      sync.Mutex
	port    uint16
	started bool
	base    uint32
	seen    map[uint32]bool
	rels    []uint32
}

// wrap returns a drop function for the memory wire that records the
// frames and drops a frame's first sending if dropFirst (which may be
// nil) says so, given its relative sequence number.
func (r *resends) wrap(port uint16, dropFirst func(rel uint32) bool) func([]byte) bool {
	r.port, r.seen = port, map[uint32]bool{}
	return func(f []byte) bool {
		s, ok := parseTCP4(f)
		if !ok || s.dstPort != port || s.payload == 0 {
			return false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.started {
			r.base, r.started = s.seq, true
		}
		rel := s.seq - r.base
		if r.seen[rel] {
			r.rels = append(r.rels, rel)
			return false
		}
		r.seen[rel] = true
		return dropFirst != nil && dropFirst(rel)
	}
}

func (r *resends) get() []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint32(nil), r.rels...)
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
	if n := after.TCP.Timeouts - before.TCP.Timeouts; n != 0 {
		t.Errorf("recovered by %d retransmission timeouts; want RACK to find the loss from the probe's SACK", n)
	}
	if after.TCP.Retransmits-before.TCP.Retransmits < 2 {
		t.Errorf("%d retransmissions, want the probe and the first segment", after.TCP.Retransmits-before.TCP.Retransmits)
	}
}

// ackLoss drops, on the wire from the server at port back to the client,
// every pure ACK that acknowledges any of a write of size bytes (counted
// from the first data segment the client sends) until the client has
// sent that first segment sends times, and signals passed when an ACK
// of the whole write then goes through. Counting the sender's own
// retransmissions of the first segment, not the ACKs, keeps the test to
// one sequence of events however late the receiver answers: a window
// update or a second ACK the receiver sends on a loaded machine is
// dropped too. So is an ACK of part of the write (a receiver that saw
// the write in two batches): let through, it would move the sender's
// first unacknowledged segment past the one counted, and the probes the
// tests wait for would never resend it.
type ackLoss struct {
	port   uint16
	size   uint32
	sends  int
	mu     sync.Mutex
	base   uint32 // first data sequence number, once firsts > 0
	firsts int    // times the first data segment was sent
	done   bool
	passed chan struct{}
	log    []string // what the hooks saw, for a failure's message
}

func newACKLoss(port uint16, size uint32, sends int) *ackLoss {
	return &ackLoss{port: port, size: size, sends: sends, passed: make(chan struct{})}
}

// data is the client side's hook: it counts sendings of the first data
// segment and, through drop, may discard data segments too.
func (l *ackLoss) data(drop func([]byte) bool) func([]byte) bool {
	return func(f []byte) bool {
		if s, ok := parseTCP4(f); ok && s.dstPort == l.port && s.payload > 0 {
			l.mu.Lock()
			if l.firsts == 0 {
				l.base = s.seq
			}
			if s.seq == l.base {
				l.firsts++
			}
			l.note("data +%d len %d", s.seq-l.base, s.payload)
			l.mu.Unlock()
		}
		return drop != nil && drop(f)
	}
}

// acks is the server side's hook.
func (l *ackLoss) acks(f []byte) bool {
	s, ok := parseTCP4(f)
	if !ok || s.srcPort != l.port || s.payload != 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firsts == 0 || int32(s.ack-l.base) <= 0 {
		return false
	}
	if l.firsts < l.sends {
		l.note("ack +%d dropped", s.ack-l.base)
		return true
	}
	l.note("ack +%d passed", s.ack-l.base)
	if s.ack == l.base+l.size && !l.done {
		l.done = true
		close(l.passed)
	}
	return false
}

// note records an event; l.mu is held.
func (l *ackLoss) note(format string, args ...any) {
	if len(l.log) < 64 {
		l.log = append(l.log, fmt.Sprintf(format, args...))
	}
}

// String is what the hooks saw, in order.
func (l *ackLoss) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.log, "; ")
}

// lossPair sets up a client on mp.a connected to a server on mp.b that
// reads size bytes and reports them on the returned channel.
func lossPair(t *testing.T, mp *memPair, port uint16, size int) (net.Conn, <-chan []byte) {
	t.Helper()
	ln, err := mp.b.Listen("tcp", netip.AddrPortFrom(memB4.Addr(), port).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
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
		// Hold the connection open (and silent) until the test ends.
		io.Copy(io.Discard, c)
	}()
	c, err := mp.a.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, got
}

// checkProbed waits for the ACK that got through after the lost ones and
// checks that a probe, not the retransmission timer, asked for it.
func checkProbed(t *testing.T, mp *memPair, l *ackLoss, before Stats) {
	t.Helper()
	select {
	case <-l.passed:
	case <-time.After(5 * time.Second):
		t.Fatalf("no acknowledgment of the whole write got through after the dropped ones; the wire saw: %v", l)
	}
	// The probe is counted after it is sent: on a loaded machine its
	// answer can come back first.
	after := mp.a.Stats()
	for end := time.Now().Add(5 * time.Second); after.TCP.RecoveryProbes == before.TCP.RecoveryProbes && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
		after = mp.a.Stats()
	}
	if n := after.TCP.Timeouts - before.TCP.Timeouts; n != 0 {
		t.Errorf("recovered by %d retransmission timeouts; want a probe after the probe timeout", n)
	}
	if after.TCP.RecoveryProbes == before.TCP.RecoveryProbes {
		t.Error("no probe was sent")
	}
}

// TestMemRecoveryProbe loses the first segment of a six-segment write and
// then the one ACK that acknowledges the whole write after the fast
// retransmission (a receiver that compresses its SACKs, as Linux does,
// sends just one). Nothing else comes back: the sender, in SACK recovery
// where RACK-TLP arms no tail loss probe, used to wait for the
// retransmission timeout (200 ms minimum). A probe after the probe
// timeout must ask for the ACK again.
func TestMemRecoveryProbe(t *testing.T) {
	// The receiver acknowledges each out-of-order segment (SACK) as it
	// arrives: without receive coalescing, which would merge the five
	// after the hole into one and acknowledge them once.
	mp := newMemPairWith(t, Adaptive, func(c *Config) { c.Debug.NoGRO = true })
	const port, size = 5002, 6 * 1420
	// Sent three times: lost, fast-retransmitted, probed.
	l := newACKLoss(port, size, 3)
	mp.pa.setDrop(l.data(dropFirstSends(port, func(rel uint32) bool { return rel == 0 })))
	mp.pb.setDrop(l.acks)
	c, got := lossPair(t, mp, port, size)
	before := mp.a.Stats()
	sendAndCheck(t, c, got, bytes.Repeat([]byte("prob"), size/4))
	checkProbed(t, mp, l, before)
	if after := mp.a.Stats(); after.TCP.SACKRecoveries == before.TCP.SACKRecoveries {
		t.Error("the sender never entered SACK recovery: the test lost nothing")
	}
}

// TestMemProbeAfterUnansweredTLP loses the ACK of a whole write and the
// ACK of the tail loss probe that follows. The sender used to leave the
// rest to the retransmission timer (200 ms minimum); a second probe, of
// the first unacknowledged segment, one probe timeout later must ask
// again.
func TestMemProbeAfterUnansweredTLP(t *testing.T) {
	mp := newMemPair(t, Adaptive)
	const port, size = 5003, 4 * 1420
	// Sent twice: first, then probed (the tail loss probe resends the
	// last segment).
	l := newACKLoss(port, size, 2)
	mp.pa.setDrop(l.data(nil))
	mp.pb.setDrop(l.acks)
	c, got := lossPair(t, mp, port, size)
	before := mp.a.Stats()
	sendAndCheck(t, c, got, bytes.Repeat([]byte("tlp!"), size/4))
	checkProbed(t, mp, l, before)
}

// TestMemProbeTimeoutFloor loses the ACK of a write of four segments:
// the tail loss probe that resends its last one must wait at least 2 ms
// after it was first sent, twice the smoothed round trip plus Linux's
// TCP_TIMEOUT_MIN (tcp_schedule_loss_probe). With twice the round trip alone
// (tens of microseconds on a LAN) a receiver descheduled for longer than
// that drew a probe every time. A loaded machine only makes the gap
// longer.
func TestMemProbeTimeoutFloor(t *testing.T) {
	mp := newMemPair(t, Spin)
	const port, size = 5006, 4 * 1420
	l := newACKLoss(port, size, 2)
	var mu sync.Mutex
	var last, probe time.Time
	sent := map[uint32]bool{}
	data := l.data(nil)
	mp.pa.setDrop(func(f []byte) bool {
		if s, ok := parseTCP4(f); ok && s.dstPort == port && s.payload > 0 {
			now := time.Now()
			mu.Lock()
			if !sent[s.seq] {
				sent[s.seq], last = true, now
			} else if probe.IsZero() {
				probe = now
			}
			mu.Unlock()
		}
		return data(f)
	})
	mp.pb.setDrop(l.acks)
	c, got := lossPair(t, mp, port, size)
	// No RTT sample after this one: every ACK of the write is lost.
	var info tcpip.TCPInfoOption
	if err := c.(*tcpConn).ep.GetSockOpt(&info); err != nil {
		t.Fatal(err)
	}
	sendAndCheck(t, c, got, bytes.Repeat([]byte("pto!"), size/4))
	select {
	case <-l.passed: // an ACK of the whole write got through
	case <-time.After(30 * time.Second):
		t.Fatalf("no ACK of the write got through; the wire saw: %v", l)
	}
	mu.Lock()
	defer mu.Unlock()
	if probe.IsZero() {
		t.Fatal("nothing was sent again: the test lost no ACK")
	}
	// The timer starts after the last segment's frame is written, so
	// the gap is the probe timeout or more.
	if gap, want := probe.Sub(last), 2*info.RTT+2*time.Millisecond; gap < want {
		t.Errorf("the probe went %v after the last segment it probes for, want twice the smoothed round trip (%v) plus 2 ms", gap, info.RTT)
	}
}

// TestMemGSOLossInsideBurst loses the ninth of ten frames that netstack
// sent as one GSO packet (the whole write, within the initial window).
// The receiver SACKs the tenth: one duplicate ACK, too few for a fast
// retransmission, so RACK must find the loss from that SACK. netstack
// used to keep the sent segment whole and mark it SACKed or not as a
// unit, and compared RACK's transmit order backwards for segments sent
// at the same instant (every frame of a burst), so the hole waited for
// the tail loss probe or the retransmission timeout.
func TestMemGSOLossInsideBurst(t *testing.T) {
	const lost = 8 * 1420
	rs, after, before := gsoBurstLoss(t, 5004, lost, nil)
	if n := after.TCP.Timeouts - before.TCP.Timeouts; n != 0 {
		t.Errorf("recovered by %d retransmission timeouts", n)
	}
	// On a loaded machine the receiver's ACKs can come later than the
	// probe timeout (twice a round trip of microseconds on this wire):
	// then a tail loss probe, and probes in recovery, resend data too.
	// Those are allowed; any other retransmission is not.
	probes := 1 + after.TCP.RecoveryProbes - before.TCP.RecoveryProbes
	n := 0
	for _, rel := range rs {
		if rel == lost {
			n++
		}
	}
	if n == 0 || uint64(len(rs)-1) > probes {
		t.Errorf("frames sent again at %v (relative sequence numbers), want the lost one (%d) once, and at most %d probes", rs, lost, probes)
	}
}

// TestMemGSOTailLoss loses the last of ten frames that netstack sent as
// one GSO packet, and the receiver's ACKs of the others until something
// is sent again: the sender holds one unacknowledged ten-frame segment
// when the tail loss probe fires. The probe must resend the last MSS, as
// Linux's does, so that its ACK covers everything. netstack used to
// resend the first MSS of that segment, the start of the write, which
// the receiver had: the lost frame then waited for a second probe, a
// delayed-ACK allowance (200 ms) later.
func TestMemGSOTailLoss(t *testing.T) {
	const lost, size = 9 * 1420, 10 * 1420
	rs, after, before := gsoBurstLoss(t, 5005, lost, func(f []byte, log *resends) bool {
		s, ok := parseTCP4(f)
		if !ok || s.srcPort != log.port || s.payload != 0 {
			return false
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		return log.started && len(log.rels) == 0 && s.ack-log.base < size
	})
	if n := after.TCP.Timeouts - before.TCP.Timeouts; n != 0 {
		t.Errorf("recovered by %d retransmission timeouts", n)
	}
	if len(rs) == 0 || rs[0] != lost {
		t.Errorf("frames sent again at %v (relative sequence numbers), want the probe to resend the lost last one (%d) first", rs, lost)
	}
}

// gsoBurstLoss writes ten MSS-sized frames' worth of data in one write,
// which netstack sends as one GSO packet, loses the frame at relative
// sequence number lost on its first sending, and returns the
// retransmitted frames and the sender's counters around the write.
// dropACK, if not nil, may drop frames the receiver sends.
func gsoBurstLoss(t *testing.T, port uint16, lost uint32, dropACK func(f []byte, log *resends) bool) (rs []uint32, after, before Stats) {
	t.Helper()
	mp := newMemPairCfg(t, Adaptive, func(*Config) {}, func(c *Config) { c.Debug.NoGRO = true })
	const size = 10 * 1420
	var log resends
	mp.pa.setDrop(log.wrap(port, func(rel uint32) bool { return rel == lost }))
	if dropACK != nil {
		mp.pb.setDrop(func(f []byte) bool { return dropACK(f, &log) })
	}
	c, got := lossPair(t, mp, port, size)
	before = mp.a.Stats()
	sendAndCheck(t, c, got, bytes.Repeat([]byte("gso!"), size/4))
	after = mp.a.Stats()
	if q := after.Queues[0]; q.TxFrames-q.TxPackets < 5 {
		t.Fatalf("%d packets in %d frames: the write did not go as a GSO packet", q.TxPackets, q.TxFrames)
	}
	t.Logf("resent %v; timeouts %d tlp %d probes %d", log.get(), after.TCP.Timeouts-before.TCP.Timeouts, after.TCP.TLPRecoveries-before.TCP.TLPRecoveries, after.TCP.RecoveryProbes-before.TCP.RecoveryProbes)
	return log.get(), after, before
}
