package stack

import (
	"io"
	"net"
	"net/netip"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// stackAddr returns an address in its own frame: the depth of the stack
// at the call, to compare with another call's on the same goroutine.
//
//go:noinline
func stackAddr() uintptr {
	var x byte
	return uintptr(unsafe.Pointer(&x))
}

// growStack makes the calling goroutine's stack at least n bytes, so that
// a measurement afterwards does not see it copied.
//
//go:noinline
func growStack(n int) byte {
	var pad [1024]byte
	if n <= len(pad) {
		return pad[0]
	}
	return growStack(n-len(pad)) + pad[n%len(pad)]
}

// TestMemWriteFitsGoroutineStack: an application goroutine's Write runs
// netstack's whole send path (TCP, IP, the link endpoint, down to the TX
// ring) on its own stack. That path must stay well inside the 8 KiB a
// connection's goroutine commonly has, or every such goroutine grows its
// stack to 16 KiB, copying it, on its first write: 8 KiB more per
// connection, and copystack was a quarter of a 10,000-connection
// server's CPU. The path took about 8 KiB before netstack's Stats were
// passed by pointer and its empty iptables hooks were split from their
// checking code: each copy of the 1,376-byte Stats struct,
// and CheckOutput's tables, sat in a frame on it.
func TestMemWriteFitsGoroutineStack(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector enlarges every frame")
	}
	mp := newMemPair(t, Spin)
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
		}
	}()
	c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 64)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	var measuring atomic.Bool
	var bottom atomic.Uintptr
	mp.pa.setDrop(func([]byte) bool {
		if measuring.Load() {
			bottom.Store(stackAddr())
		}
		return false
	})
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no stack shrinking while measuring
	growStack(64 << 10)
	top := stackAddr()
	measuring.Store(true)
	_, err = c.Write(msg)
	measuring.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	if bottom.Load() == 0 {
		t.Fatal("the write did not reach the TX ring on the writing goroutine")
	}
	depth := top - bottom.Load()
	t.Logf("Write to the TX ring: %d bytes of stack", depth)
	if depth > 3<<10 {
		t.Errorf("Write used %d bytes of stack down to the TX ring, want at most 3 KiB (TestMemActiveConnectionStacks)", depth)
	}
}

// TestMemActiveConnectionStacks: 2,000 connections that have each
// echoed 100 bytes, their server goroutines blocked in Read again, hold
// 4 KiB of stack each, as the same goroutines on the kernel's sockets
// do. The send path runs on the writing goroutine, and while it needed
// more than the 3 KiB or so a 4 KiB stack leaves (the runtime keeps 928
// bytes spare), every connection's stack doubled to 8 KiB on its first
// write. What brought it under: netstack's ReadResult kept out of Read's
// frame, TCP's header fields passed by pointer and the route's link
// fields resolved in place (tcp.Endpoint.ReadCount, Route.resolveInto), and offload.Tx.Reset
// no longer building a Tx (with its 256-byte header) on the stack.
func TestMemActiveConnectionStacks(t *testing.T) {
	per := echoConnStacks(t, false)
	t.Logf("2000 connections after an echo each: %d bytes of goroutine stack each", per)
	if per > stackBound {
		t.Errorf("active connections' goroutines hold %d bytes of stack each, want 4 KiB (at most %d)", per, stackBound)
	}
}

// stackBound is the most goroutine stack per connection the stack tests
// allow: 4 KiB, and a sixteenth for the test's own goroutines and the
// runtime's (measured 3,900 to 4,120). A goroutine's stack is 4 KiB or
// 8 KiB here, so more than one connection in sixteen whose stack
// doubled fails.
const stackBound = 4<<10 + 256

// echoConnStacks returns the goroutine stack per connection that 2,000
// connections to an echo server hold after an echo each: with the
// collector off (no stack shrinking), or, idle, after two collections.
func echoConnStacks(t *testing.T, idle bool) int64 {
	t.Helper()
	if raceEnabled {
		t.Skip("the race detector enlarges every frame")
	}
	mp := newMemPair(t, Spin)
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	const n = 2000
	var before, after runtime.MemStats
	runtime.GC()
	if !idle {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
	}
	runtime.ReadMemStats(&before)
	echoConns(t, mp, n)
	if idle {
		runtime.GC()
		runtime.GC()
	}
	runtime.ReadMemStats(&after)
	return (int64(after.StackInuse) - int64(before.StackInuse)) / n
}

// TestMemConnectionHeap holds the live heap 2,000 connections hold after
// an echo each, both ends (the dialing stack's and the listening stack's
// state, the tcpConns, a 128-byte buffer and a goroutine per server
// connection), to 11,850 bytes per pair. The bound sits between what the
// heap is with netstack's SACK scoreboards sharing one B-tree free list
// (about 11,575 bytes, steady to ±10 between runs) and without (about
// 12,150: btree.NewG gives every scoreboard a free list of its own, about
// 300 bytes, on each end), so the test fails if that sharing is lost, and
// when anything else adds some 300 bytes to every connection: measure
// both before moving the bound.
func TestMemConnectionHeap(t *testing.T) {
	mp := newMemPair(t, Spin)
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	acceptEach(ln, func(c net.Conn) {
		defer c.Close()
		b := make([]byte, 128)
		n, _ := c.Read(b)
		c.Write(b[:n])
		c.Read(b) // until the client closes
	})
	const n = 2000
	var before, after runtime.MemStats
	warmGoroutines(2 * n)
	settleHeap(&before) // what earlier tests closed, freed first
	echoConns(t, mp, n)
	settleHeap(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d connections after an echo each: %d bytes of live heap per connection, both ends", n, per)
	if per > 11850 {
		t.Errorf("%d bytes of live heap per connection (both ends), want at most 11,850", per)
	}
}

// TestMemIdleConnectionStacksShrink: a server goroutine blocked in Read
// uses little enough of its stack that the runtime halves the stack at a
// collection, so 2,000 idle connections' goroutines come to about 4 KiB
// each. They stayed at 8 KiB while Read's own frame (netstack's ReadResult,
// over a kilobyte) was on the stack of every blocked reader.
func TestMemIdleConnectionStacksShrink(t *testing.T) {
	per := echoConnStacks(t, true)
	t.Logf("2000 idle connections: %d bytes of goroutine stack each", per)
	if per > stackBound {
		t.Errorf("idle connections' goroutines hold %d bytes of stack each, want 4 KiB (at most %d)", per, stackBound)
	}
}

// echoConns dials n connections from mp.a to port 7 on mp.b, echoes 100
// bytes on each and leaves them open until the test ends.
func echoConns(t *testing.T, mp *memPair, n int) {
	t.Helper()
	buf := make([]byte, 100)
	for i := 0; i < n; i++ {
		c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// warmGoroutines runs n goroutines at once and lets them exit. The
// runtime keeps an exited goroutine's descriptor for the next goroutine
// and never frees it, so a measurement of the heap that n new goroutines
// add counts their descriptors (about 500 bytes each) only in a process
// that has not yet had that many; after this, in none.
func warmGoroutines(n int) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Add(n)
	for range n {
		go func() {
			defer wg.Done()
			<-release
		}()
	}
	close(release)
	wg.Wait()
}

// settleHeap collects until the live heap stops shrinking (stacks and
// connections other tests closed are freed by goroutines that finish
// after them) and reads the memory statistics into m.
func settleHeap(m *runtime.MemStats) {
	runtime.GC()
	runtime.ReadMemStats(m)
	for i := 0; i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		prev := m.HeapAlloc
		runtime.GC()
		runtime.ReadMemStats(m)
		if prev < m.HeapAlloc+64<<10 {
			return
		}
	}
}
