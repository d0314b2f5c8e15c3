package bpf

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ustack-dev/ustack/internal/testpkt"
)

// hostileFrames are the malformed and hostile frames FuzzProgram's seed
// corpus holds besides seedFrames: truncated frames, lying length fields,
// bad IHL and data offsets, option overflows, RST and SYN segments, ICMP
// errors quoting an owned flow, fragments, VLAN tags.
func hostileFrames() map[string][]byte {
	tcp := testpkt.TCP(peer4, own4, 40000, tcpOwn, []byte("data"))
	tcp6 := testpkt.TCP(peer6, own6, 40000, tcpOwn, []byte("data"))
	udp := testpkt.UDP(peer4, own4, 5000, udpOwn, []byte("q"))
	m := map[string][]byte{}
	for _, n := range []int{14, 15, 33, 34, 35, 37, 38, 53} {
		m["truncated4-"+strconv.Itoa(n)] = tcp[:n]
	}
	for _, n := range []int{14, 53, 54, 55, 57, 58} {
		m["truncated6-"+strconv.Itoa(n)] = tcp6[:n]
	}
	mod := func(name string, f []byte, fn func([]byte)) {
		g := append([]byte(nil), f...)
		fn(g)
		m[name] = g
	}
	mod("ip-total-long", tcp, func(g []byte) { binary.BigEndian.PutUint16(g[16:], 9000) })
	mod("ip-total-short", tcp, func(g []byte) { binary.BigEndian.PutUint16(g[16:], 19) })
	mod("ip-ihl-4", tcp, func(g []byte) { g[14] = 0x44 })
	mod("ip-ihl-15", tcp, func(g []byte) { g[14] = 0x4f })
	mod("ip-ihl-6-short", tcp[:40], func(g []byte) { g[14] = 0x46 })
	mod("ip-version-6-in-v4", tcp, func(g []byte) { g[14] = 0x65 })
	mod("ip6-version-4", tcp6, func(g []byte) { g[14] = 0x40 })
	mod("tcp-doff-0", tcp, func(g []byte) { g[46] = 0 })
	mod("tcp-doff-15", tcp, func(g []byte) { g[46] = 0xf0 })
	mod("udp-length-lie", udp, func(g []byte) { binary.BigEndian.PutUint16(g[38:], 1000) })
	mod("tcp-rst", tcp, func(g []byte) { g[47] = 0x04 })
	mod("tcp-syn", tcp, func(g []byte) { g[47] = 0x02 })
	mod("tcp-synfin", tcp, func(g []byte) { g[47] = 0x03 })
	mod("frag-first", udp, func(g []byte) { binary.BigEndian.PutUint16(g[20:], 0x2000) })
	mod("frag-later", udp, func(g []byte) { binary.BigEndian.PutUint16(g[20:], 0x0001) })
	mod("frag-df", udp, func(g []byte) { binary.BigEndian.PutUint16(g[20:], 0x4000) })
	mod("frag-past-64k", udp, func(g []byte) { binary.BigEndian.PutUint16(g[20:], 0x1fff) })
	m["frag6"] = testpkt.IPv6(peer6, own6, testpkt.ProtoFragment, append([]byte{17, 0, 0, 1, 0, 0, 0, 9}, make([]byte, 8)...))
	m["ip-options"] = func() []byte {
		g := testpkt.IPv4(peer4, own4, testpkt.ProtoUDP, append([]byte{7, 3, 4, 0}, testpkt.L4(1, udpOwn, 8)...))
		g[14] = 0x46
		return g
	}()
	m["ip-option-overflow"] = func() []byte {
		g := testpkt.IPv4(peer4, own4, testpkt.ProtoUDP, append([]byte{7, 200, 4, 0}, testpkt.L4(1, udpOwn, 8)...))
		g[14] = 0x46
		return g
	}()
	quote := testpkt.TCP(own4, peer4, tcpOwn, 40000, nil)[14:42]
	m["icmp-frag-needed-quoting"] = testpkt.IPv4(peer4, own4, testpkt.ProtoICMP, append([]byte{3, 4, 0, 0, 0, 0, 2, 64}, quote...))
	m["icmp-frag-needed-not-owned"] = testpkt.IPv4(peer4, host4, testpkt.ProtoICMP, append([]byte{3, 4, 0, 0, 0, 0, 2, 64}, quote...))
	quote6 := testpkt.TCP(own6, peer6, tcpOwn, 40000, nil)[14:74]
	m["icmp6-too-big-quoting"] = testpkt.IPv6(peer6, own6, testpkt.ProtoICMPv6, append([]byte{2, 0, 0, 0, 0, 0, 5, 0}, quote6...))
	m["icmp6-ns-short"] = testpkt.IPv6(peer6, snm6, testpkt.ProtoICMPv6, testpkt.NDP(testpkt.NeighborSolicitation, own6)[:20])
	m["arp-short"] = testpkt.ARP(1, peer4, own4)[:30]
	m["vlan"] = testpkt.Eth(testpkt.EtherTypeVLAN, append([]byte{0, 5, 8, 0}, tcp[14:]...))
	m["not-ours"] = testpkt.TCP(peer4, host4, 40000, 22, nil)
	m["port-not-owned"] = testpkt.TCP(peer4, own4, 40000, tcpOwn+100, nil)
	return m
}

// TestWriteProgramSeeds writes seedFrames and hostileFrames to
// testdata/fuzz/FuzzProgram when USTACK_WRITE_SEEDS is set.
func TestWriteProgramSeeds(t *testing.T) {
	if os.Getenv("USTACK_WRITE_SEEDS") == "" {
		t.Skip("set USTACK_WRITE_SEEDS=1 to rewrite testdata/fuzz/FuzzProgram")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzProgram")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	all := hostileFrames()
	for i, f := range seedFrames() {
		all["frame-"+strconv.Itoa(i)] = f
	}
	for name, f := range all {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(f)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
