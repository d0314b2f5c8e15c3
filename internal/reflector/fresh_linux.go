package reflector

import (
	"net"

	"github.com/ustack-dev/ustack/offload"
)

// freshFlows is the TCP echo's per-flow state in Fresh mode: a
// direct-mapped table of header templates, one per client flow, rebuilt
// when another flow takes the slot.
type freshFlows struct {
	slots [256]tcpTemplate
}

// replyFresh answers the TCP data segment in rx, as replyTCP does, but as
// a TCP must: the payload copied into out, a fresh transmit frame, behind
// headers from the flow's template, with the TCP checksum computed in the
// copy, and the timestamp option (TSval tsNow, TSecr the client's TSval)
// when the client sent one. It returns the reply's length; 0 for a
// segment to drop (counted), and -1 for one that is not data with an ACK
// (a SYN, FIN, RST or pure ACK), which replyTCP answers in place.
func (t *freshFlows) replyFresh(r *Responder, rx, out []byte, tsNow uint32) int {
	s, ok := parseTCP4(rx)
	if !ok || s.flags&(tcpSyn|tcpFin|tcpRst) != 0 || s.flags&tcpAck == 0 || len(s.payload) == 0 || s.dst.Addr().As4() != r.IP {
		return -1
	}
	switch offload.Verify(rx[:s.frameLen]) {
	case offload.Valid, offload.Partial:
	default:
		r.BadChecksums.Add(1)
		return 0
	}
	peer := s.src.Addr().As4()
	key := flowKey{peer: peer, pport: s.src.Port(), lport: s.dst.Port(), ts: s.ts, used: true}
	tm := &t.slots[(uint(peer[3])^uint(key.pport)^uint(key.pport>>8))&(uint(len(t.slots))-1)]
	if tm.key != key {
		tm.init(net.HardwareAddr(rx[6:12]), r.MAC, s.dst, s.src, s.ts)
		tm.key = key
	}
	n := tm.write(out, s.seq, s.seq+uint32(len(s.payload)), tcpAck|tcpPsh, tsNow, s.tsval, s.payload)
	if n == 0 {
		r.Ignored.Add(1)
		return 0
	}
	r.TCP.Add(1)
	return n
}
