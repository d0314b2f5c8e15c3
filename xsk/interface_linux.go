package xsk

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// LookupInterface finds the named interface in the calling thread's
// network namespace. An interface that does not exist is reported as
// ErrNoInterface; either way the netlink error is kept in the chain.
func LookupInterface(name string) (Interface, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return Interface{}, fmt.Errorf("%w: %q: %w", ErrNoInterface, name, err)
		}
		return Interface{}, fmt.Errorf("look up interface %q: %w", name, err)
	}
	a := l.Attrs()
	ifc := Interface{Name: a.Name, Index: a.Index, MTU: a.MTU, MAC: a.HardwareAddr, RxQueues: a.NumRxQueues, Kind: l.Type()}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return Interface{}, fmt.Errorf("list addresses of interface %q: %w", name, err)
	}
	for _, ad := range addrs {
		if ip, ok := netip.AddrFromSlice(ad.IP); ok && ad.IPNet != nil {
			ones, _ := ad.IPNet.Mask.Size()
			ifc.Addrs = append(ifc.Addrs, netip.PrefixFrom(ip.Unmap(), ones))
		}
	}
	return ifc, nil
}
