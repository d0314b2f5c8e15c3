package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ustack-dev/ustack/internal/echo"
	"github.com/ustack-dev/ustack/stack"
	"github.com/ustack-dev/ustack/vethtest"
)

type demoResult struct {
	name     string
	rtt      *hdrhistogram.Histogram
	reqs     float64
	bulkGbps float64
}

func runDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	duration := fs.Duration("duration", 3*time.Second, "measured `time` per workload and contender")
	size := fs.Int("size", 64, "ping-pong message `bytes`")
	conns := fs.Int("conns", 32, "connections for the rate workload")
	pollFlag := fs.String("poll", "spin", "ustack worker polling `policy`: spin, adaptive or blocking")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *duration <= 0 || *duration > 10*time.Minute {
		return fmt.Errorf("-duration %v: want (0, 10m]", *duration)
	}
	if *size < 1 || *size > 65536 || *conns < 1 || *conns > 10000 {
		return errors.New("-size must be 1..65536 and -conns 1..10000")
	}
	poll, err := stack.ParsePollPolicy(*pollFlag)
	if err != nil {
		return err
	}
	if err := checkRoot(); err != nil {
		return err
	}
	pair, err := vethtest.New(vethtest.Options{})
	if err != nil {
		return err
	}
	defer pair.Close()
	fmt.Printf("topology: namespace %s (kernel peer %v) ⟷ veth ⟷ namespace %s (kernel %v, ustack %v)\n",
		pair.Kernel.Namespace, pair.Kernel.IPv4, pair.Ustack.Namespace, pair.Ustack.IPv4, vethtest.UstackIPv4)
	fmt.Printf("client: Go net in %s; each contender: %d-byte ping-pong, %d-connection rate, single-flow bulk, %v each\n\n",
		pair.Kernel.Namespace, *size, *conns, *duration)

	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := pair.Kernel.Do(func() (err error) {
			c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	measure := func(name, addr, bulkAddr string) (demoResult, error) {
		r := demoResult{name: name}
		fmt.Printf("%-8s ping-pong...", name)
		c, err := dial(ctx, "tcp", addr)
		if err != nil {
			return r, fmt.Errorf("%s: dial: %w", name, err)
		}
		r.rtt, err = echo.PingPong(ctx, c, echo.PingPongConfig{Size: *size, Duration: *duration})
		c.Close()
		if err != nil {
			return r, fmt.Errorf("%s: ping-pong: %w", name, err)
		}
		fmt.Printf(" p50 %s; rate...", us(r.rtt.ValueAtQuantile(50)))
		n, el, err := echo.Rate(ctx, dial, echo.RateConfig{Network: "tcp", Address: addr, Conns: *conns, Size: *size, Duration: *duration})
		if err != nil {
			return r, fmt.Errorf("%s: rate: %w", name, err)
		}
		r.reqs = float64(n) / el.Seconds()
		fmt.Printf(" %.0f/s; bulk...", r.reqs)
		c, err = dial(ctx, "tcp", bulkAddr)
		if err != nil {
			return r, fmt.Errorf("%s: dial: %w", name, err)
		}
		b, el, err := echo.Bulk(ctx, c, *duration)
		c.Close()
		if err != nil {
			return r, fmt.Errorf("%s: bulk: %w", name, err)
		}
		r.bulkGbps = float64(b) * 8 / el.Seconds() / 1e9
		fmt.Printf(" %.2f Gbit/s\n", r.bulkGbps)
		return r, nil
	}

	// The kernel first, with no XDP program on the interface, so it is
	// measured at its best.
	var kln, kdln net.Listener
	if err := pair.Ustack.Do(func() (err error) {
		if kln, err = net.Listen("tcp", netip.AddrPortFrom(pair.Ustack.IPv4, 7000).String()); err != nil {
			return err
		}
		kdln, err = net.Listen("tcp", netip.AddrPortFrom(pair.Ustack.IPv4, 7001).String())
		return err
	}); err != nil {
		return err
	}
	go echo.ServeTCP(kln)
	go echo.ServeDiscard(kdln)
	kernel, err := measure("kernel", kln.Addr().String(), kdln.Addr().String())
	kln.Close()
	if kdln != nil {
		kdln.Close()
	}
	if err != nil {
		return err
	}

	var s *stack.Stack
	if err := pair.Ustack.Do(func() (err error) {
		s, err = stack.New(stack.Config{
			Interface: pair.Ustack.Link,
			Addrs:     []netip.Prefix{netip.PrefixFrom(vethtest.UstackIPv4, vethtest.PrefixLen4)},
			Poll:      poll,
		})
		return err
	}); err != nil {
		return err
	}
	defer s.Close()
	uln, err := s.Listen("tcp", netip.AddrPortFrom(vethtest.UstackIPv4, 7000).String())
	if err != nil {
		return err
	}
	udln, err := s.Listen("tcp", netip.AddrPortFrom(vethtest.UstackIPv4, 7001).String())
	if err != nil {
		uln.Close()
		return err
	}
	go echo.ServeTCP(uln)
	go echo.ServeDiscard(udln)
	ustack, err := measure("ustack", uln.Addr().String(), udln.Addr().String())
	uln.Close()
	udln.Close()
	if err != nil {
		return err
	}

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tRTT p50\tp99\tp99.9\trequests/s\tbulk Gbit/s\t")
	for _, r := range []demoResult{kernel, ustack} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t%.2f\t\n", r.name, us(r.rtt.ValueAtQuantile(50)), us(r.rtt.ValueAtQuantile(99)),
			us(r.rtt.ValueAtQuantile(99.9)), r.reqs, r.bulkGbps)
	}
	ratio := func(a, b float64) string { return fmt.Sprintf("%.2fx", a/b) }
	fmt.Fprintf(tw, "ustack/kernel\t%s\t%s\t%s\t%s\t%s\t\n",
		ratio(float64(ustack.rtt.ValueAtQuantile(50)), float64(kernel.rtt.ValueAtQuantile(50))),
		ratio(float64(ustack.rtt.ValueAtQuantile(99)), float64(kernel.rtt.ValueAtQuantile(99))),
		ratio(float64(ustack.rtt.ValueAtQuantile(99.9)), float64(kernel.rtt.ValueAtQuantile(99.9))),
		ratio(ustack.reqs, kernel.reqs), ratio(ustack.bulkGbps, kernel.bulkGbps))
	tw.Flush()
	fmt.Printf("\nustack polling: %v. RTT ratios below 1 and rate/bulk ratios above 1 favour ustack.\n", poll)
	fmt.Println("Client and servers share this one process and Go runtime here; the full benchmark runs")
	fmt.Println("each in a process of its own, with more contenders, JSON and plots: go run ./bench")
	return nil
}
