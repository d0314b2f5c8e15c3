//go:build linux

package main

// The "conns" workload: many connections opened at once and held idle,
// as a server with thousands of mostly quiet clients sees them. The
// client opens them all (up to connsInFlight dials at a time), echoes 100
// bytes on each, says HELD, and keeps them until the parent has read the
// server's resident memory and answers "release". The figures: how long
// opening and echoing took (connections per second) and the server's RSS
// growth per connection held.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ustack-dev/ustack/internal/echo"
)

// connsInFlight bounds the dials in progress at once.
const connsInFlight = 1000

// connsMsg is what each held connection echoes once.
const connsMsg = 100

// heldConns opens n connections, echoes connsMsg bytes on each, marks
// HELD, and closes them all once "release" arrives on in.
func heldConns(ctx context.Context, dial echo.Dialer, addr string, n int, mark func(string), in *bufio.Reader) (clientResult, error) {
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	sem := make(chan struct{}, connsInFlight)
	var wg sync.WaitGroup
	mark("START")
	t0 := time.Now()
	for i := range conns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := dial(ctx, "tcp", addr)
			if err != nil {
				errs[i] = err
				return
			}
			conns[i] = c
			c.SetDeadline(time.Now().Add(30 * time.Second))
			msg := make([]byte, connsMsg)
			if _, err = c.Write(msg); err == nil {
				_, err = io.ReadFull(c, msg)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if failed > 0 {
		return clientResult{}, fmt.Errorf("%d of %d connections failed, the first: %w", failed, n, first)
	}
	mark("HELD")
	if line, err := in.ReadString('\n'); err != nil || strings.TrimSpace(line) != "release" {
		return clientResult{}, fmt.Errorf("waiting for release: %q, %v", line, err)
	}
	return clientResult{Count: int64(n), Seconds: el.Seconds()}, nil
}

// serverMemPerConn is contender c's server memory per held connection
// (conns workload), NaN if not measured: its RSS growth, and for a kernel
// server also its sockets' kernel objects, which no process's RSS shows
// (socket, inode, file, epoll entry: slab). Those are the kernel's slab
// growth in c's run beyond that of ustack's run, whose client is the same
// Go kernel client but whose server holds no kernel socket per
// connection; ustack's servers are charged their RSS alone.
func (r *report) serverMemPerConn(c string) float64 {
	x := r.find(c, "conns", 0)
	if x == nil || x.Error != "" || x.RSSPerConn <= 0 {
		return math.NaN()
	}
	if !strings.HasPrefix(c, "kernel") {
		return x.RSSPerConn
	}
	u := r.find("ustack", "conns", 0)
	if u == nil || u.Error != "" || x.SlabPerConn <= 0 {
		return math.NaN()
	}
	return x.RSSPerConn + max(0, x.SlabPerConn-u.SlabPerConn)
}

// printConns prints the held-connections table.
func (r *report) printConns(w io.Writer) {
	kc := r.find("kernel", "conns", 0)
	if kc == nil {
		return
	}
	fmt.Fprintf(w, "\n%d connections opened at once (%d dials in flight), %d bytes echoed on each, then held idle (per connection: server RSS growth, the kernel's slab growth (both ends' kernel sockets), and the server's memory: RSS, plus a kernel server's sockets)\n", kc.Conns, connsInFlight, connsMsg)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\tconnections/s\t×k\tRSS/conn KB\t×k\tslab/conn KB\tmemory/conn KB\t×k\t")
	km := r.serverMemPerConn("kernel")
	for _, n := range r.contenders() {
		if x := r.find(n, "conns", 0); x != nil && x.Error == "" {
			m := r.serverMemPerConn(n)
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.1f\t%s\t%.1f\t%.1f\t%s\t\n", n, x.ReqPerSec, ratio(x.ReqPerSec, kc.ReqPerSec), x.RSSPerConn/1e3, ratio(x.RSSPerConn, kc.RSSPerConn),
				x.SlabPerConn/1e3, m/1e3, ratio(m, km))
		}
	}
	tw.Flush()

	fmt.Fprintf(w, "\nCPU while the connections open (START to HELD): the client's and the server's CPUs busy (/proc/stat, the kernel's softirq work included), a ustack server's workers busy (stack.QueueStats.WorkerBusy: a spinning worker's CPU is busy all along), and per connection the server CPUs' time, the workers', its kicks' (KickTime: on veth a copy-mode kick runs the client's receive path) and the workers' less the kicks; core µs/conn: the server's CPU per connection with the platform's costs apart (%s), and connections per server core-second from it\n", coreLegend)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\tclient CPUs busy\tserver CPUs busy\tworkers busy\tserver CPUs µs/conn\tworkers µs/conn\t×k\tkicks µs/conn\tworkers less kicks\t×k\tcore µs/conn\tconns/core-s\t")
	kcpu := r.serverCPUPerConn("kernel")
	for _, n := range r.contenders() {
		x := r.find(n, "conns", 0)
		if x == nil || x.Error != "" || x.Seconds <= 0 || x.Count <= 0 {
			continue
		}
		// Busy time over the window and the CPUs or workers it sums.
		pct := func(v float64, n int) string {
			if v <= 0 || math.IsNaN(v) {
				return "-"
			}
			return fmt.Sprintf("%.0f%%", 100*v/x.Seconds/float64(max(n, 1)))
		}
		us := func(v float64) string {
			if v <= 0 || math.IsNaN(v) {
				return "-"
			}
			return fmt.Sprintf("%.1f", v/float64(x.Count)*1e6)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, pct(x.ClientCPUsBusy, x.ClientCPUCount), pct(x.ServerCPUsBusy, x.ServerCPUCount), pct(x.WorkerBusy, x.Workers),
			us(x.ServerCPUsBusy), us(x.WorkerBusy), ratio(r.serverCPUPerConn(n), kcpu),
			us(x.KickTime), us(x.WorkerBusy-x.KickTime), ratio(r.workerCPUPerConnLessKicks(n), kcpu), coreUs(x), corePerSec(x))
	}
	tw.Flush()
}

// serverCPUPerConn is contender c's server CPU seconds per connection in
// the conns workload's connect window, NaN if not measured: a ustack
// server's workers' busy time (what a handler server spends; a net.Conn
// server's goroutines come on top), any other server's CPUs' busy time,
// the softirq work that ran there included.
func (r *report) serverCPUPerConn(c string) float64 {
	x := r.find(c, "conns", 0)
	if x == nil || x.Error != "" || x.Count <= 0 {
		return math.NaN()
	}
	v := x.ServerCPUsBusy
	if strings.HasPrefix(c, "ustack") {
		v = x.WorkerBusy
	}
	if v <= 0 || math.IsNaN(v) {
		return math.NaN()
	}
	return v / float64(x.Count)
}

// workerCPUPerConnLessKicks is a ustack server's workers' busy seconds
// per connection in the conns workload less what its kicks took (all of
// a handler server's kicks are its worker's; a net.Conn server's
// goroutines make some): on veth a copy-mode kick runs the client's
// receive path, work a zero-copy NIC would not put on the server's CPU.
// NaN if not measured.
func (r *report) workerCPUPerConnLessKicks(c string) float64 {
	x := r.find(c, "conns", 0)
	if x == nil || x.Error != "" || x.Count <= 0 || x.WorkerBusy <= 0 || x.KickTime <= 0 {
		return math.NaN()
	}
	return (x.WorkerBusy - x.KickTime) / float64(x.Count)
}

// connsCPUShare is the share of the conns workload's connect window that
// contender c's client CPUs (client) or its ustack server's workers spent
// busy, on average over them, NaN if not measured.
func (r *report) connsCPUShare(c string, client bool) float64 {
	x := r.find(c, "conns", 0)
	if x == nil || x.Error != "" || x.Seconds <= 0 {
		return math.NaN()
	}
	v, n := x.WorkerBusy, x.Workers
	if client {
		v, n = x.ClientCPUsBusy, x.ClientCPUCount
	}
	if v <= 0 || math.IsNaN(v) {
		return math.NaN()
	}
	return v / x.Seconds / float64(max(n, 1))
}
