// Command ustack-perf measures ustack's queue pairs the way perftest
// measures RDMA devices: write_lat, send_lat, read_lat, atomic_lat,
// write_bw and send_bw, with perftest's output columns. The queue pairs
// speak iWARP over ustack's TCP or the kernel's, so either end can be
// either stack.
//
//	ustack-perf demo                                    # needs root
//	ustack-perf server -stack ustack -iface eth1 -addr 198.18.0.10/24 -listen :18515
//	ustack-perf client -stack kernel -connect 198.18.0.10:18515 -test write_lat -size 64 -iters 10000
//
// The server serves any test the client asks for (the client sends the
// test, size and iterations as connection private data). Run
// "ustack-perf <mode> -h" for every flag of a mode.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/ustack-dev/ustack/internal/cli"
	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/qp"
	"github.com/ustack-dev/ustack/stack"
)

const usage = `usage: ustack-perf <mode> [flags]

modes:
  demo     build a veth pair in two new namespaces and run the latency
           tests and write_bw over queue pairs on the kernel's TCP and on
           ustack, beside TCP ping-pong and bulk, each server and client a
           process of its own on CPUs of its own, as go run ./bench does
           (needs root)
  server   serve queue-pair tests over ustack or the kernel
  client   run one test against a server

tests: write_lat send_lat read_lat atomic_lat write_bw send_bw
"ustack-perf <mode> -h" lists a mode's flags.
`

func main() {
	maybeRunDemoRole()
	cli.Main("ustack-perf", usage, map[string]cli.Mode{"demo": runDemo, "server": runServer, "client": runClient})
}

// stackFlags select and configure the stack, as ustack-echo's do.
type stackFlags struct {
	which, iface, addrs, poll string
}

func (f *stackFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.which, "stack", "ustack", "`stack` to use: ustack or kernel")
	fs.StringVar(&f.iface, "iface", "", "interface ustack attaches to (-stack ustack)")
	fs.StringVar(&f.addrs, "addr", "", "comma-separated `prefixes` ustack owns, e.g. 198.18.0.10/24 (-stack ustack)")
	fs.StringVar(&f.poll, "poll", "spin", "ustack worker polling `policy`: spin, adaptive or blocking")
	fs.IntVar(&perftest.SpinLimit, "spin", perftest.SpinLimit, "`checks` of memory or a CQ before a waiter blocks")
}

// open returns ustack (nil for the kernel) as the flags ask.
func (f *stackFlags) open() (*stack.Stack, error) {
	switch f.which {
	case "kernel":
		return nil, nil
	case "ustack":
	default:
		return nil, fmt.Errorf("-stack %q: want ustack or kernel", f.which)
	}
	if f.iface == "" || f.addrs == "" {
		return nil, errors.New("-stack ustack needs -iface and -addr")
	}
	prefixes, err := cli.ParsePrefixes(f.addrs)
	if err != nil {
		return nil, err
	}
	poll, err := stack.ParsePollPolicy(f.poll)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w (running as uid %d)", stack.ErrPermission, os.Geteuid())
	}
	return stack.New(stack.Config{Interface: f.iface, Addrs: prefixes, Poll: poll})
}

func runServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	var sf stackFlags
	sf.register(fs)
	listen := fs.String("listen", ":18515", "`address` to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	s, err := sf.open()
	if err != nil {
		return err
	}
	var ln net.Listener
	if s != nil {
		defer s.Close()
		ln, err = s.Listen("tcp", *listen)
	} else {
		ln, err = net.Listen("tcp", *listen)
	}
	if err != nil {
		return err
	}
	defer ln.Close()
	context.AfterFunc(ctx, func() { ln.Close() })
	fmt.Printf("serving queue-pair tests on %v (%s TCP)\n", ln.Addr(), sf.which)
	l := qp.NewListener(ln)
	for {
		prm, err := perftest.Serve(ctx, l)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "ustack-perf: %v\n", err)
			continue
		}
		fmt.Printf("served %s, %d bytes × %d\n", prm.Test, prm.Size, prm.Iters)
	}
}

func runClient(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	var sf stackFlags
	sf.register(fs)
	connect := fs.String("connect", "", "server `address`")
	test := fs.String("test", "write_lat", "`test`: "+strings.Join(perftest.TestNames, ", "))
	size := fs.Int("size", 64, "message `bytes`")
	iters := fs.Int("iters", 10000, "`iterations`")
	handler := fs.Bool("handler", false, "write_lat: answer each Write from the queue pairs' OnInput handlers, where it lands, on both ends")
	postList := fs.Int("post-list", 1, "write_bw, send_bw: `requests` posted per PostSend call (perftest's --post_list; over kernel TCP a list goes out in one system call)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *connect == "" {
		return errors.New("client needs -connect and no arguments")
	}
	prm := perftest.Params{Test: *test, Size: *size, Iters: *iters, Handler: *handler, PostList: *postList}
	if err := prm.Validate(); err != nil {
		return err
	}
	s, err := sf.open()
	if err != nil {
		return err
	}
	if s != nil {
		defer s.Close()
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		if s != nil {
			return s.DialContext(ctx, "tcp", *connect)
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", *connect)
	}
	r, err := perftest.Run(ctx, dial, prm)
	if err != nil {
		return err
	}
	printResult(prm, r)
	return nil
}

func printResult(prm perftest.Params, r perftest.Result) {
	fmt.Println(strings.Repeat("-", 100))
	if r.Lat != nil {
		fmt.Println(perftest.LatHeader)
		fmt.Println(perftest.LatRow(prm.Size, prm.Iters, r.Lat))
	} else {
		fmt.Println(perftest.BwHeader)
		fmt.Println(perftest.BwRow(prm.Size, prm.Iters, r))
	}
	fmt.Println(strings.Repeat("-", 100))
}
