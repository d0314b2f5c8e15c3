package link

import (
	"net/netip"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// TestEarlyDemuxOnLink: the worker answers SYNs only from peers on
// ustack's on-link prefixes.
func TestEarlyDemuxOnLink(t *testing.T) {
	f := &Demux{prefixes: []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24"), netip.MustParsePrefix("2001:db8::1/64")}}
	for a, want := range map[string]bool{
		"198.18.0.2": true, "198.18.1.2": false, "2001:db8::99": true, "2001:db9::1": false, "::ffff:198.18.0.2": false,
	} {
		if got := f.onLink(tcpip.AddrFromSlice(netip.MustParseAddr(a).AsSlice())); got != want {
			t.Errorf("onLink(%s) = %v, want %v", a, got, want)
		}
	}
}
