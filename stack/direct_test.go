package stack

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv4"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv6"
)

// TestScriptDirectWrite: with the fast path on, every TCP segment of an
// IPv4 or IPv6 connection (the handshake's, data, pure ACKs, FIN) is written by
// the direct send (Route.WriteDirect, WriteTCPFrame), and its IP header is
// byte for byte the one netstack's network endpoint writes; with Config.Debug.NoFastPath
// none is, and the headers are the same. Both runs play one script.
func TestScriptDirectWrite(t *testing.T) {
	for _, v := range []struct {
		fast, ts, v6 bool
	}{{true, false, false}, {true, true, false}, {true, true, true}, {false, false, false}, {false, true, false}, {false, true, true}} {
		fast := v.fast
		name := "fast"
		if !fast {
			name = "nofastpath"
		}
		if v.ts {
			name += "/timestamps"
		}
		if v.v6 {
			name += "/ipv6"
		}
		t.Run(name, func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{IPv6: v.v6, Timestamps: v.ts, Config: func(c *Config) { c.Debug.NoFastPath = !fast }})
			var tcpFrames int
			var bad []string
			p.frame = func(f []byte) {
				switch header.Ethernet(f).Type() {
				case header.IPv4ProtocolNumber:
					ip := header.IPv4(f[header.EthernetMinimumSize:])
					if ip.Protocol() != uint8(header.TCPProtocolNumber) {
						return
					}
					tcpFrames++
					want := make(header.IPv4, header.IPv4MinimumSize)
					want.Encode(&header.IPv4Fields{
						TotalLength: ip.TotalLength(), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
						Flags: header.IPv4FlagDontFragment, SrcAddr: ip.SourceAddress(), DstAddr: ip.DestinationAddress(),
					})
					want.SetChecksum(^want.CalculateChecksum())
					if !bytes.Equal(ip[:header.IPv4MinimumSize], want) {
						bad = append(bad, "IPv4 header "+hex.EncodeToString(ip[:header.IPv4MinimumSize])+", want "+hex.EncodeToString(want))
					}
				case header.IPv6ProtocolNumber:
					ip := header.IPv6(f[header.EthernetMinimumSize:])
					if ip.TransportProtocol() != header.TCPProtocolNumber {
						return
					}
					tcpFrames++
					want := make(header.IPv6, header.IPv6MinimumSize)
					want.Encode(&header.IPv6Fields{
						PayloadLength: ip.PayloadLength(), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64,
						SrcAddr: ip.SourceAddress(), DstAddr: ip.DestinationAddress(),
					})
					if !bytes.Equal(ip[:header.IPv6MinimumSize], want) {
						bad = append(bad, "IPv6 header "+hex.EncodeToString(ip[:header.IPv6MinimumSize])+", want "+hex.EncodeToString(want))
					}
				}
			}
			c := p.Connect()
			p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("hello")})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 6})
			if got := readAvailable(t, c, time.Second); string(got) != "hello" {
				t.Fatalf("read %q", got)
			}
			// One segment: a larger write is a GSO packet the link
			// cuts, which takes netstack's path.
			reply := bytes.Repeat([]byte("w"), 1000)
			if _, err := c.Write(reply); err != nil {
				t.Fatal(err)
			}
			for got := 0; got < len(reply); {
				s, ok := p.next(scriptWait)
				if !ok {
					t.Fatalf("%d of %d bytes came", got, len(reply))
				}
				got += len(s.Payload)
			}
			p.Send(seg{Flags: "A", Seq: 6, Ack: 1001})
			c.Close()
			p.Expect(seg{Flags: "FA", Seq: 1001, Ack: 6})
			for _, b := range bad {
				t.Error(b)
			}
			direct := p.s.Stats().FastPath.Sent
			switch {
			case tcpFrames < 4:
				t.Fatalf("saw %d TCP frames, want at least 4", tcpFrames)
			case fast && direct != uint64(tcpFrames):
				t.Errorf("the direct send wrote %d of %d TCP frames, want all", direct, tcpFrames)
			case !fast && direct != 0:
				t.Errorf("the direct send wrote %d TCP frames with NoFastPath, want 0", direct)
			}
		})
	}
}

// TestScriptDirectWriteDeclines: the fast path's send leaves to netstack
// what it does not take: a write larger than the MSS, which goes down as
// one GSO packet that the link cuts. Every segment still arrives,
// checksummed, in order.
func TestScriptDirectWriteDeclines(t *testing.T) {
	t.Run("gso", func(t *testing.T) {
		p := newScriptPeer(t, scriptOptions{})
		c := p.Connect()
		before := p.s.Stats()
		reply := bytes.Repeat([]byte("g"), 4000)
		if _, err := c.Write(reply); err != nil {
			t.Fatal(err)
		}
		got := 0
		for got < len(reply) {
			s, ok := p.next(scriptWait)
			if !ok {
				t.Fatalf("%d of %d bytes came", got, len(reply))
			}
			got += len(s.Payload)
		}
		after := p.s.Stats()
		if sent, direct := after.TCP.SegmentsSent-before.TCP.SegmentsSent, after.FastPath.Sent-before.FastPath.Sent; sent == 0 || direct != 0 {
			t.Errorf("a 4000-byte write: %d segments sent, %d of them direct; want the GSO packet on netstack's path", sent, direct)
		}
		if miss := after.FastPath.SendMissSize - before.FastPath.SendMissSize; miss == 0 {
			t.Errorf("the GSO packet was not counted as a miss for its size")
		}
	})
}

// TestScriptFrameTemplate: a connection's data segments take their
// Ethernet and network headers from a template made by its first
// (stack.Route.PrepareFrameTemplate) and kept while nothing changes; each change the
// template holds is seen by the next segment, which makes a new one: the
// neighbour's link address, the protocol's default TTL, the connection's
// own TTL; and once ustack's address is removed no segment leaves from
// it.
func TestScriptFrameTemplate(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		name := map[bool]string{false: "ipv4", true: "ipv6"}[v6]
		t.Run(name, func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{IPv6: v6})
			var dst tcpip.LinkAddress
			var ttl uint8
			var src tcpip.Address
			var badSum bool
			p.frame = func(f []byte) {
				eth := header.Ethernet(f)
				dst = eth.DestinationAddress()
				switch eth.Type() {
				case header.IPv4ProtocolNumber:
					ip := header.IPv4(f[header.EthernetMinimumSize:])
					ttl, src = ip.TTL(), ip.SourceAddress()
					badSum = badSum || ip.CalculateChecksum() != 0xffff || int(ip.TotalLength()) != len(ip)
				case header.IPv6ProtocolNumber:
					ip := header.IPv6(f[header.EthernetMinimumSize:])
					ttl, src = ip.HopLimit(), ip.SourceAddress()
					badSum = badSum || int(ip.PayloadLength())+header.IPv6MinimumSize != len(ip)
				}
			}
			c := p.Connect()
			ns := p.s.ns
			proto, peer := ipv4.ProtocolNumber, tcpip.AddrFromSlice(p.local.Addr().AsSlice())
			if v6 {
				proto = ipv6.ProtocolNumber
			}
			seq := uint32(1)
			// send writes one byte and returns its frame's destination
			// MAC and TTL, acknowledging it.
			send := func(b byte) (tcpip.LinkAddress, uint8) {
				t.Helper()
				if _, err := c.Write([]byte{b}); err != nil {
					t.Fatal(err)
				}
				p.Expect(seg{Flags: "PA", Seq: seq, Ack: 1, Payload: []byte{b}})
				seq++
				p.Send(seg{Flags: "A", Seq: 1, Ack: seq})
				return dst, ttl
			}
			before, made0 := p.s.Stats().FastPath.Sent, ns.FrameTemplatesMade()
			// made checks how many templates the segments since the
			// last call made.
			made := func(what string, want uint64) {
				t.Helper()
				if n := ns.FrameTemplatesMade() - made0; n != want {
					t.Errorf("%s: %d frame templates made, want %d", what, n, want)
				}
				made0 += want
			}
			for _, b := range []byte("abc") {
				if mac, hops := send(b); mac != p.peerMAC || hops != 64 {
					t.Fatalf("segment %q: to %v with TTL %d, want %v and 64", b, mac, hops, p.peerMAC)
				}
			}
			made("three segments", 1)
			moved := tcpip.LinkAddress([]byte{2, 0, 0, 0, 3, 9})
			if err := ns.AddStaticNeighbor(nicID, proto, peer, moved); err != nil {
				t.Fatal(err)
			}
			if mac, _ := send('d'); mac != moved {
				t.Errorf("after the neighbour moved: to %v, want %v", mac, moved)
			}
			made("after the neighbour moved", 1)
			opt := tcpip.DefaultTTLOption(33)
			if err := ns.SetNetworkProtocolOption(proto, &opt); err != nil {
				t.Fatal(err)
			}
			if _, hops := send('e'); hops != 33 {
				t.Errorf("after the default TTL became 33: TTL %d", hops)
			}
			made("after the default TTL changed", 1)
			ttlOpt := tcpip.IPv4TTLOption
			if v6 {
				ttlOpt = tcpip.IPv6HopLimitOption
			}
			if err := c.(*tcpConn).ep.SetSockOptInt(ttlOpt, 17); err != nil {
				t.Fatal(err)
			}
			if _, hops := send('f'); hops != 17 {
				t.Errorf("after the connection's TTL became 17: TTL %d", hops)
			}
			if _, hops := send('g'); hops != 17 {
				t.Errorf("the next segment: TTL %d, want 17", hops)
			}
			made("after the connection's TTL changed", 1)
			if badSum {
				t.Error("a frame's IP header had a wrong length or checksum")
			}
			if direct := p.s.Stats().FastPath.Sent - before; direct < 7 {
				t.Errorf("%d of the 7 data segments were written direct", direct)
			}
			local := tcpip.AddrFromSlice(p.remote.Addr().AsSlice())
			if err := ns.RemoveAddress(nicID, local); err != nil {
				t.Fatal(err)
			}
			src = tcpip.Address{}
			c.Write([]byte{'h'})
			if s, ok := p.next(50 * time.Millisecond); ok || src == local {
				t.Errorf("after ustack's address was removed, sent %v from %v", s, src)
			}
		})
	}
}
