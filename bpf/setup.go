package bpf

import (
	"fmt"
	"net/netip"
)

// Steering is the steering of one interface's traffic to AF_XDP sockets,
// as Setup builds it.
type Steering struct {
	// Ifindex is the interface, in the calling thread's network namespace.
	Ifindex int
	// Mode is how to attach; AttachAuto tries native mode, then generic.
	Mode AttachMode
	// Sockets are the AF_XDP sockets' file descriptors, by RX queue.
	Sockets []int
	// Owned are the addresses whose traffic goes to the sockets, and
	// which of it; Ports are (address, protocol, port) flows owned on top.
	Owned []Owned
	Ports []OwnedPort
}

// Owned is one address a Steering owns.
type Owned struct {
	Addr  netip.Addr
	Flags OwnFlags
}

// OwnedPort is one flow a Steering owns.
type OwnedPort struct {
	Addr  netip.Addr
	Proto Protocol
	Port  uint16
}

// Setup does what every user of the steering program does, in order: load
// it, attach it to the interface, register each queue's socket and own the
// addresses. It returns the program and the mode it attached in; on error
// nothing stays loaded or attached.
func Setup(s Steering) (*Program, AttachMode, error) {
	p, err := Load()
	if err != nil {
		return nil, 0, err
	}
	mode, err := p.Attach(s.Ifindex, s.Mode)
	if err != nil {
		p.Close()
		return nil, 0, err
	}
	for q, fd := range s.Sockets {
		if err := p.SetSocket(q, fd); err != nil {
			p.Close()
			return nil, 0, err
		}
	}
	for _, o := range s.Owned {
		if err := p.Own(o.Addr, o.Flags); err != nil {
			p.Close()
			return nil, 0, fmt.Errorf("own %v: %w", o.Addr, err)
		}
	}
	for _, o := range s.Ports {
		if err := p.OwnPort(o.Addr, o.Proto, o.Port); err != nil {
			p.Close()
			return nil, 0, fmt.Errorf("own %v port %d: %w", o.Addr, o.Port, err)
		}
	}
	return p, mode, nil
}
