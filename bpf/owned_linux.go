package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

func addrKey(a netip.Addr) (ustackAddrKey, error) {
	var k ustackAddrKey
	switch {
	case a.Is4():
		k.Family = 4
		b := a.As4()
		copy(k.Addr[:], b[:])
	case a.Is6() && !a.Is4In6():
		k.Family = 6
		k.Addr = a.As16()
	default:
		return k, fmt.Errorf("address %v is neither IPv4 nor IPv6", a)
	}
	return k, nil
}

// Own adds addr to owned_addrs with flags, replacing earlier flags.
func (p *Program) Own(addr netip.Addr, flags OwnFlags) error {
	k, err := addrKey(addr)
	if err != nil {
		return fmt.Errorf("own: %w", err)
	}
	if err := p.objs.OwnedAddrs.Put(&k, uint32(flags)); err != nil {
		return fmt.Errorf("own %v: %w", addr, err)
	}
	return nil
}

// Disown removes addr from owned_addrs. Removing an absent address is not
// an error.
func (p *Program) Disown(addr netip.Addr) error {
	k, err := addrKey(addr)
	if err != nil {
		return fmt.Errorf("disown: %w", err)
	}
	if err := p.objs.OwnedAddrs.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("disown %v: %w", addr, err)
	}
	return nil
}

func portKey(addr netip.Addr, proto Protocol, port uint16) (ustackPortKey, error) {
	if proto != TCP && proto != UDP {
		return ustackPortKey{}, fmt.Errorf("protocol %v: only tcp and udp ports can be owned", proto)
	}
	ak, err := addrKey(addr)
	if err != nil {
		return ustackPortKey{}, err
	}
	var be [2]byte
	binary.BigEndian.PutUint16(be[:], port)
	return ustackPortKey{Family: ak.Family, Proto: uint8(proto), Port: binary.NativeEndian.Uint16(be[:]), Addr: ak.Addr}, nil
}

// OwnPort adds (addr, proto, port) to owned_ports.
func (p *Program) OwnPort(addr netip.Addr, proto Protocol, port uint16) error {
	k, err := portKey(addr, proto, port)
	if err != nil {
		return fmt.Errorf("own port: %w", err)
	}
	if err := p.objs.OwnedPorts.Put(&k, uint32(1)); err != nil {
		return fmt.Errorf("own %v %v:%d: %w", proto, addr, port, err)
	}
	return nil
}

// DisownPort removes (addr, proto, port) from owned_ports. Removing an
// absent entry is not an error.
func (p *Program) DisownPort(addr netip.Addr, proto Protocol, port uint16) error {
	k, err := portKey(addr, proto, port)
	if err != nil {
		return fmt.Errorf("disown port: %w", err)
	}
	if err := p.objs.OwnedPorts.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("disown %v %v:%d: %w", proto, addr, port, err)
	}
	return nil
}
