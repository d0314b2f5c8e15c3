package stack_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/ustack-dev/ustack/stack"
)

// echo is a Handler that writes back what it receives, on the worker.
type echo struct{}

func (echo) OnOpen(s *stack.Stream)              {}
func (echo) OnTraffic(s *stack.Stream, b []byte) { s.Write(b) }
func (echo) OnClose(s *stack.Stream, err error)  {}

// newPipe joins two stacks by an in-memory wire.
func newPipe() (client, server *stack.Stack, err error) {
	return stack.NewPipe(
		stack.Config{Addrs: []netip.Prefix{netip.MustParsePrefix("198.18.6.1/24")}},
		stack.Config{Addrs: []netip.Prefix{netip.MustParsePrefix("198.18.6.2/24")}},
	)
}

// An echo server run to completion: the worker that processed the request
// calls the handler, whose reply goes onto the TX ring before the worker
// polls again. No goroutine per connection. (Over an in-memory pipe here;
// on an interface, stack.New instead of NewPipe.)
func ExampleStack_ListenHandler() {
	client, server, err := newPipe()
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	defer server.Close()
	ln, err := server.ListenHandler("tcp", ":7", echo{})
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	c, err := client.Dial("tcp", "198.18.6.2:7")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("hello, worker"))
	buf := make([]byte, 13)
	if _, err := io.ReadFull(c, buf); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(buf))
	// Output: hello, worker
}

// httpResponder is an HTTP/1.1 keep-alive responder on the handler API:
// it answers every GET with a fixed body, keeping partial requests in the
// stream's context between calls. (A sketch of the shape, not a full
// HTTP server: requests with bodies are refused.)
type httpResponder struct{ body []byte }

func (h *httpResponder) OnOpen(s *stack.Stream) { s.SetContext(new(bytes.Buffer)) }

func (h *httpResponder) OnTraffic(s *stack.Stream, b []byte) {
	in := s.Context().(*bytes.Buffer)
	in.Write(b) // b is valid only during the call
	for {
		req := in.Bytes()
		end := bytes.Index(req, []byte("\r\n\r\n"))
		if end < 0 {
			return // wait for the rest of the request
		}
		head := req[:end]
		in.Next(end + 4)
		if !bytes.HasPrefix(head, []byte("GET ")) || bytes.Contains(bytes.ToLower(head), []byte("content-length:")) {
			s.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			s.Close()
			return
		}
		var out []byte
		out = append(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "...)
		out = strconv.AppendInt(out, int64(len(h.body)), 10)
		out = append(out, "\r\n\r\n"...)
		s.Write(append(out, h.body...))
		if bytes.Contains(bytes.ToLower(head), []byte("connection: close")) {
			s.Close()
			return
		}
	}
}

func (h *httpResponder) OnClose(s *stack.Stream, err error) {}

// An HTTP/1.1 keep-alive responder on the handler API, queried by Go's
// own HTTP client: the three requests share one connection.
func ExampleStack_ListenHandler_http() {
	client, server, err := newPipe()
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	defer server.Close()
	ln, err := server.ListenHandler("tcp", ":80", &httpResponder{body: []byte("hello from the worker\n")})
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	dials := 0
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials++
		return client.DialContext(ctx, network, addr)
	}}}
	for i := 0; i < 3; i++ {
		resp, err := hc.Get("http://198.18.6.2/")
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.Status, ": ", string(body))
	}
	fmt.Println("connections:", dials)
	// Output:
	// 200 OK: hello from the worker
	// 200 OK: hello from the worker
	// 200 OK: hello from the worker
	// connections: 1
}
