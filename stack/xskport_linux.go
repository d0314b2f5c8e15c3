package stack

import (
	"github.com/ustack-dev/ustack/xsk"
)

// xskPort is a port over an AF_XDP socket: the socket's own methods,
// Wait and Interrupt included, plus UMEM access by descriptor and address.
type xskPort struct {
	*xsk.Socket
	umem *xsk.UMEM
}

var _ port = (*xskPort)(nil)

func newXSKPort(s *xsk.Socket) *xskPort { return &xskPort{Socket: s, umem: s.UMEM()} }

func (p *xskPort) Data(d xsk.Desc) []byte   { return p.umem.Data(d) }
func (p *xskPort) Frame(addr uint64) []byte { return p.umem.Frame(addr) }
