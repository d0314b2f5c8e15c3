package stack_test

import (
	"fmt"
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
