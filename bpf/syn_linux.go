package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// SetSynKeys gives the program the keys and clock of the TCP whose
// listeners it answers SYNs for (AnswerSyns): the same as netstack's
// (tcp.SynSecrets), and monoBase, CLOCK_MONOTONIC at the zero of
// netstack's monotonic clock.
func (p *Program) SetSynKeys(k SynKeys) error {
	var v ustackSynKeys
	for i := range k.Cookie {
		v.Cookie[i] = sipKey(k.Cookie[i])
	}
	v.Ts = sipKey(k.TSOffset)
	if k.MonoBase < 0 {
		return fmt.Errorf("set syn keys: clock base %v before the clock's zero", k.MonoBase)
	}
	v.MonoBaseNs = uint64(k.MonoBase)
	if err := p.objs.SynKeys.Put(uint32(0), &v); err != nil {
		return fmt.Errorf("set syn keys: %w", err)
	}
	return nil
}

func sipKey(k [16]byte) [2]uint64 {
	return [2]uint64{binary.LittleEndian.Uint64(k[:8]), binary.LittleEndian.Uint64(k[8:])}
}

// AnswerSyns has the program answer SYNs to the IPv4 listener at (addr,
// port) itself, with a cookie, until CLOCK_MONOTONIC reads a.Until.
func (p *Program) AnswerSyns(addr netip.Addr, port uint16, a SynAnswer) error {
	if !addr.Is4() {
		return fmt.Errorf("answer syns at %v: IPv4 only", addr)
	}
	k, err := portKey(addr, TCP, port)
	if err != nil {
		return fmt.Errorf("answer syns: %w", err)
	}
	if a.Until < 0 {
		return fmt.Errorf("answer syns at %v:%d: deadline %v before the clock's zero", addr, port, a.Until)
	}
	v := ustackSynAnswer{UntilNs: uint64(a.Until), Mss: a.MSS, Window: a.Window, Ttl: a.TTL, Tos: a.TOS}
	if a.WndScale < 0 || a.WndScale > 14 {
		return fmt.Errorf("answer syns at %v:%d: window scale %d outside [0, 14]", addr, port, a.WndScale)
	}
	v.Wscale = uint8(a.WndScale)
	if a.SACK {
		v.Flags |= synSACK
	}
	if err := p.objs.SynAnswers.Put(&k, &v); err != nil {
		return fmt.Errorf("answer syns at %v:%d: %w", addr, port, err)
	}
	return nil
}

// StopSyns stops the program answering SYNs to (addr, port); stopping
// where it does not is not an error.
func (p *Program) StopSyns(addr netip.Addr, port uint16) error {
	k, err := portKey(addr, TCP, port)
	if err != nil {
		return fmt.Errorf("stop syns: %w", err)
	}
	if err := p.objs.SynAnswers.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("stop syns at %v:%d: %w", addr, port, err)
	}
	return nil
}

// RunOut is Run, also returning the frame as the program left it (a
// SYN-ACK for VerdictTX).
func (p *Program) RunOut(frame []byte) (Verdict, []byte, error) {
	out := make([]byte, len(frame)+256)
	opts := ebpf.RunOptions{Data: frame, DataOut: out}
	ret, err := p.objs.UstackXdp.Run(&opts)
	if err != nil {
		return 0, nil, fmt.Errorf("test run: %w", err)
	}
	return Verdict(ret), opts.DataOut, nil
}

// Monotonic reads CLOCK_MONOTONIC, the clock of SynAnswer.Until and
// SynKeys.MonoBase.
func Monotonic() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
