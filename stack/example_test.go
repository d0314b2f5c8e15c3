package stack_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/netip"

	"github.com/ustack-dev/ustack/stack"
)

// An unmodified net/http server on a ustack listener. (Needs root and an
// interface to attach to, so it is compiled but not run by go test.)
func Example() {
	s, err := stack.New(stack.Config{
		Interface: "eth1",
		Addrs:     []netip.Prefix{netip.MustParsePrefix("198.18.0.10/24")},
		Poll:      stack.Spin,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ln, err := s.Listen("tcp", ":8080")
	if err != nil {
		log.Fatal(err)
	}
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from ustack")
	}))
}

// An application's test over a bad network: two stacks joined by an
// in-memory wire, with 2% of the frames each receives dropped and 2%
// corrupted (seeded, so every run sees the same faults). TCP recovers;
// the checksum check drops every corrupted frame. Needs no privileges.
func ExampleNewPipe() {
	faults := &stack.Faults{Seed: 1, RX: stack.FaultRates{Drop: 0.02, Corrupt: 0.02}}
	client, server, err := stack.NewPipe(
		stack.Config{Addrs: []netip.Prefix{netip.MustParsePrefix("198.18.5.1/24")}, Faults: faults},
		stack.Config{Addrs: []netip.Prefix{netip.MustParsePrefix("198.18.5.2/24")}, Faults: faults},
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	defer server.Close()
	ln, err := server.Listen("tcp", "198.18.5.2:80")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("ustack "), 100000))
	}))
	hc := &http.Client{Transport: &http.Transport{DialContext: client.DialContext}}
	resp, err := hc.Get("http://198.18.5.2/")
	if err != nil {
		log.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	st := client.Stats()
	q := st.Queues[0]
	fmt.Println(len(body), "bytes, intact:", bytes.Equal(body, bytes.Repeat([]byte("ustack "), 100000)))
	fmt.Println("faults injected:", q.FaultsRX.Dropped > 0, q.FaultsRX.Corrupted > 0)
	// Caught by the worker's checksum check, or (a damaged IP version or
	// length) by netstack's IP layer.
	fmt.Println("every corrupted frame dropped:", q.RxBadChecksum+st.IP.Malformed == q.FaultsRX.Corrupted)
	// Output:
	// 700000 bytes, intact: true
	// faults injected: true true
	// every corrupted frame dropped: true
}
