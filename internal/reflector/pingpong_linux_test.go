package reflector_test

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/reflector"
	"github.com/ustack-dev/ustack/vethtest"
)

// BenchmarkPrivilegedPingPong measures one flow's 64-byte round trip
// against a Floor, per client: a kernel UDP socket (floor), a kernel TCP
// connection against the in-place echo (floor-tcp) and the Fresh one
// (floor-tcp-fresh), a Conn (floor-floor) and a TCPConn against a Fresh
// floor (floor-floor-tcp). It reports the median round trip and, for the
// kernel's TCP, the segments its namespace sent and received per round
// trip and the delayed and pure ACKs among them: what the kernel client
// makes the floor do besides echoing. The -yield256 variants run the
// kernel clients against a floor that yields its thread as ustack's
// workers do.
func BenchmarkPrivilegedPingPong(b *testing.B) {
	type variant struct {
		name  string
		fresh bool
		dial  func(p *vethtest.Pair, floor netip.AddrPort) (net.Conn, error)
		yield int // FloorConfig.YieldEvery
	}
	variants := []variant{
		{"floor", false, func(p *vethtest.Pair, floor netip.AddrPort) (net.Conn, error) {
			return net.Dial("udp", floor.String())
		}, 0},
		{"floor-tcp", false, func(p *vethtest.Pair, floor netip.AddrPort) (net.Conn, error) {
			return net.Dial("tcp", floor.String())
		}, 0},
		{"floor-tcp-fresh", true, func(p *vethtest.Pair, floor netip.AddrPort) (net.Conn, error) {
			return net.Dial("tcp", floor.String())
		}, 0},
		{"floor-floor", false, func(p *vethtest.Pair, floor netip.AddrPort) (net.Conn, error) {
			return reflector.Dial(p.Kernel.Link, netip.MustParseAddrPort("198.18.0.20:40000"), floor)
		}, 0},
		{"floor-floor-tcp", true, func(p *vethtest.Pair, floor netip.AddrPort) (net.Conn, error) {
			return reflector.DialTCP(p.Kernel.Link, netip.MustParseAddrPort("198.18.0.20:40000"), floor)
		}, 0},
	}
	// The kernel clients against a floor that yields its thread every
	// 256 empty polls, as ustack's workers do.
	for _, v := range variants[:2] {
		v.name += "-yield256"
		v.yield = 256
		variants = append(variants, v)
	}
	for _, c := range variants {
		b.Run(c.name, func(b *testing.B) {
			p := vethtest.NewT(b, vethtest.Options{})
			const port = 7000
			floor := netip.AddrPortFrom(vethtest.UstackIPv4, port)
			startFloor(b, p, reflector.FloorConfig{Port: port, Fresh: c.fresh, YieldEvery: c.yield})
			err := p.Kernel.Do(func() error {
				conn, err := c.dial(p, floor)
				if err != nil {
					return err
				}
				defer conn.Close()
				msg, buf := make([]byte, 64), make([]byte, 2048)
				rtt := make([]time.Duration, 0, min(b.N, 1<<20))
				trip := func() error {
					conn.SetReadDeadline(time.Now().Add(2 * time.Second))
					t0 := time.Now()
					if _, err := conn.Write(msg); err != nil {
						return err
					}
					if _, err := io.ReadFull(conn, buf[:len(msg)]); err != nil {
						return err
					}
					if len(rtt) < cap(rtt) {
						rtt = append(rtt, time.Since(t0))
					}
					return nil
				}
				for range 2000 { // warm-up, as the bench's
					if err := trip(); err != nil {
						return err
					}
				}
				rtt = rtt[:0]
				before := tcpCounters()
				b.ResetTimer()
				for range b.N {
					if err := trip(); err != nil {
						return err
					}
				}
				b.StopTimer()
				after := tcpCounters()
				slices.Sort(rtt)
				b.ReportMetric(float64(rtt[len(rtt)/2])/1e3, "p50-µs")
				b.ReportMetric(float64(rtt[len(rtt)*99/100])/1e3, "p99-µs")
				if strings.Contains(c.name, "tcp") && !strings.HasPrefix(c.name, "floor-floor") {
					for _, k := range []string{"Tcp:OutSegs", "Tcp:InSegs", "TcpExt:DelayedACKs", "TcpExt:TCPPureAcks", "TcpExt:TCPHPHits"} {
						b.ReportMetric(float64(after[k]-before[k])/float64(b.N), strings.SplitN(k, ":", 2)[1]+"/op")
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// tcpCounters reads the calling thread's namespace's TCP counters
// (nstat's Tcp and TcpExt), keyed "Tcp:OutSegs".
func tcpCounters() map[string]int64 {
	m := map[string]int64{}
	for _, file := range []string{"/proc/thread-self/net/snmp", "/proc/thread-self/net/netstat"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		var names []string
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) < 2 {
				continue
			}
			if names == nil || names[0] != fields[0] {
				names = fields
				continue
			}
			for i := 1; i < len(fields) && i < len(names); i++ {
				v, _ := strconv.ParseInt(fields[i], 10, 64)
				m[strings.TrimSuffix(fields[0], ":")+":"+names[i]] = v
			}
			names = nil
		}
		f.Close()
	}
	return m
}
