//go:build !linux

package bpf

import (
	"net/netip"
	"time"
)

// Program is the steering program; on this system it cannot be loaded.
type Program struct{}

// Load reports ErrNotSupported.
func Load() (*Program, error) { return nil, ErrNotSupported }

// Attach reports ErrNotSupported.
func (p *Program) Attach(int, AttachMode) (AttachMode, error) { return 0, ErrNotSupported }

// Mode returns AttachAuto.
func (p *Program) Mode() AttachMode { return AttachAuto }

// Detach does nothing.
func (p *Program) Detach() error { return nil }

// Close does nothing.
func (p *Program) Close() error { return nil }

// SetSocket reports ErrNotSupported.
func (p *Program) SetSocket(int, int) error { return ErrNotSupported }

// ClearSocket reports ErrNotSupported.
func (p *Program) ClearSocket(int) error { return ErrNotSupported }

// Own reports ErrNotSupported.
func (p *Program) Own(netip.Addr, OwnFlags) error { return ErrNotSupported }

// Disown reports ErrNotSupported.
func (p *Program) Disown(netip.Addr) error { return ErrNotSupported }

// OwnPort reports ErrNotSupported.
func (p *Program) OwnPort(netip.Addr, Protocol, uint16) error { return ErrNotSupported }

// DisownPort reports ErrNotSupported.
func (p *Program) DisownPort(netip.Addr, Protocol, uint16) error { return ErrNotSupported }

// Counters reports ErrNotSupported.
func (p *Program) Counters() (Counters, error) { return Counters{}, ErrNotSupported }

// Run reports ErrNotSupported.
func (p *Program) Run([]byte) (Verdict, error) { return 0, ErrNotSupported }

// SetSynKeys reports ErrNotSupported.
func (p *Program) SetSynKeys(SynKeys) error { return ErrNotSupported }

// AnswerSyns reports ErrNotSupported.
func (p *Program) AnswerSyns(netip.Addr, uint16, SynAnswer) error { return ErrNotSupported }

// StopSyns reports ErrNotSupported.
func (p *Program) StopSyns(netip.Addr, uint16) error { return ErrNotSupported }

// RunOut reports ErrNotSupported.
func (p *Program) RunOut([]byte) (Verdict, []byte, error) { return 0, nil, ErrNotSupported }

// Monotonic returns the time since an arbitrary point.
func Monotonic() time.Duration { return time.Since(start) }

var start = time.Now()
