//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// gnetServer is gnet v2's event loop on the kernel's TCP, the peer a Go
// developer picks for lower latency than net: an echo (OnTraffic writes
// back what it read) or a discard that counts what it read and, when
// the client closes its write side, writes the count back (the bulk
// workload's protocol, echo.ServeDiscard's). Its Ps are Go's default,
// its event loops one per P (WithMulticore).
type gnetServer struct {
	gnet.BuiltinEventEngine
	discard bool
	booted  chan gnet.Engine
}

func (g *gnetServer) OnBoot(eng gnet.Engine) gnet.Action {
	g.booted <- eng
	return gnet.None
}

func (g *gnetServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if g.discard {
		c.SetContext(new(int64))
	}
	return nil, gnet.None
}

func (g *gnetServer) OnTraffic(c gnet.Conn) gnet.Action {
	if g.discard {
		n, _ := c.Discard(-1)
		*c.Context().(*int64) += int64(n)
		return gnet.None
	}
	// The bytes are valid during the call; Write copies what the
	// socket does not take at once.
	b, _ := c.Next(-1)
	if _, err := c.Write(b); err != nil {
		return gnet.Close
	}
	return gnet.None
}

// OnClose answers a discard client that closed its write side with the
// count: gnet closes a connection at EOF, and writes what OnClose leaves
// in the connection before it closes the socket.
func (g *gnetServer) OnClose(c gnet.Conn, err error) gnet.Action {
	if g.discard && errors.Is(err, io.EOF) {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(*c.Context().(*int64)))
		c.Write(b[:])
	}
	return gnet.None
}

// startGnet runs gnet's echo on addr and its discard on the next port,
// and returns a function that stops both.
func startGnet(addr netip.AddrPort) (func(), error) {
	var engines []gnet.Engine
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		for _, e := range engines {
			e.Stop(ctx)
		}
	}
	for i, discard := range []bool{false, true} {
		g := &gnetServer{discard: discard, booted: make(chan gnet.Engine, 1)}
		a := netip.AddrPortFrom(addr.Addr(), addr.Port()+uint16(i))
		errc := make(chan error, 1)
		go func() {
			errc <- gnet.Run(g, "tcp://"+a.String(), gnet.WithMulticore(true), gnet.WithTCPNoDelay(gnet.TCPNoDelay),
				gnet.WithReuseAddr(true), gnet.WithLogger(gnetLogger{}))
		}()
		select {
		case e := <-g.booted:
			engines = append(engines, e)
		case err := <-errc:
			stop()
			return nil, fmt.Errorf("gnet on %v: %w", a, err)
		case <-time.After(10 * time.Second):
			stop()
			return nil, fmt.Errorf("gnet on %v: no boot in 10s", a)
		}
	}
	return stop, nil
}

// gnetLogger passes gnet's warnings and errors to standard error and
// drops the rest: a server child's standard output is its protocol with
// the parent (READY, BUSY, …).
type gnetLogger struct{}

func (gnetLogger) Debugf(string, ...any) {}
func (gnetLogger) Infof(string, ...any)  {}
func (gnetLogger) Warnf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "gnet: "+f+"\n", a...)
}
func (gnetLogger) Errorf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "gnet: "+f+"\n", a...)
}
func (gnetLogger) Fatalf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "gnet: "+f+"\n", a...)
	os.Exit(1)
}
