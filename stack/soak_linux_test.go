package stack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/vethtest"
)

// TestPrivilegedSoak runs a mixed load through a ustack echo server for a
// while (20 s; USTACK_SOAK=3m for longer): connections opened, used for
// ten 1 KiB echoes and closed, in a loop, by 8 clients, and 4 long-lived
// connections echoing 16 KiB messages without pause. Every echo is checked. Memory must stay flat: the live
// heap in the last third of the run no larger than 1.5 times its peak in
// the first third, plus 8 MiB.
func TestPrivilegedSoak(t *testing.T) {
	d := 20 * time.Second
	if v := os.Getenv("USTACK_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < time.Second || d > time.Hour {
			t.Fatalf("USTACK_SOAK=%q: want a duration from 1s to 1h", v)
		}
	}
	p, s := newVethStack(t, vethtest.Options{}, Config{})
	ln, err := s.Listen("tcp", ":7")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	addr := netip.AddrPortFrom(ustack4.Addr(), 7).String()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var opened, echoed atomic.Int64
	var firstErr atomic.Pointer[error]
	fail := func(err error) {
		firstErr.CompareAndSwap(nil, &err)
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	roundTrip := func(c io.ReadWriter, msg, got []byte) error {
		if _, err := c.Write(msg); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, got); err != nil {
			return err
		}
		if !bytes.Equal(msg, got) {
			return fmt.Errorf("echo differs")
		}
		echoed.Add(1)
		return nil
	}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg, got := bytes.Repeat([]byte{byte(i)}, 1024), make([]byte, 1024)
			// At most 50 connections a second per client: the kernel
			// client keeps each closed one in TIME-WAIT for 60 s, and
			// its 28,000 ephemeral ports must last the whole run.
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for !stopped() {
				<-tick.C
				c, err := kernelDial(context.Background(), p, "tcp4", addr)
				if err != nil {
					fail(err)
					return
				}
				opened.Add(1)
				c.SetDeadline(time.Now().Add(10 * time.Second))
				for j := 0; j < 10; j++ {
					if err := roundTrip(c, msg, got); err != nil {
						c.Close()
						fail(fmt.Errorf("churning client %d: %w", i, err))
						return
					}
				}
				c.Close()
			}
		}()
	}
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := kernelDial(context.Background(), p, "tcp4", addr)
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			msg, got := bytes.Repeat([]byte{0xa0 + byte(i)}, 16<<10), make([]byte, 16<<10)
			for !stopped() {
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if err := roundTrip(c, msg, got); err != nil {
					fail(fmt.Errorf("long-lived client %d: %w", i, err))
					return
				}
			}
		}()
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	var early, late uint64
	start := time.Now()
	for time.Since(start) < d && firstErr.Load() == nil {
		time.Sleep(min(d/30, 2*time.Second))
		h, el := heap(), time.Since(start)
		switch {
		case el < d/3:
			early = max(early, h)
		case el > 2*d/3:
			late = max(late, h)
		}
	}
	close(stop)
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		t.Fatal(*e)
	}
	st := s.Stats()
	t.Logf("%v: %d connections opened, %d echoes checked; live heap peak %.1f MiB in the first third, %.1f MiB in the last; %d connections established at the end",
		d, opened.Load(), echoed.Load(), float64(early)/(1<<20), float64(late)/(1<<20), st.TCP.CurrentEstablished)
	if late > early*3/2+8<<20 {
		t.Errorf("memory grew: live heap peak %.1f MiB in the first third of the run, %.1f MiB in the last", float64(early)/(1<<20), float64(late)/(1<<20))
	}
}
