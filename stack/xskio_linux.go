package stack

import (
	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/xsk"
)

// xskIO is frame I/O over an AF_XDP socket: the socket's own methods,
// Wait, Interrupt and Close included, plus UMEM access by descriptor and
// address.
type xskIO struct {
	*xsk.Socket
	umem *xsk.UMEM
}

var _ frameIO = (*xskIO)(nil)

func newXSKIO(s *xsk.Socket) *xskIO { return &xskIO{Socket: s, umem: s.UMEM()} }

func (p *xskIO) Data(d xsk.Desc) []byte   { return p.umem.Data(d) }
func (p *xskIO) Frame(addr uint64) []byte { return p.umem.Frame(addr) }

// Span gives the multi-buffer layer (sgio) adjacent frames as one slice.
func (p *xskIO) Span(addr uint64, n int) []byte { return p.umem.Span(addr, n) }

// ReadStats implements frameio.IO: the socket's counters (zero if the
// kernel's cannot be read).
func (p *xskIO) ReadStats(st *frameio.Stats) { st.XSK, _ = p.Socket.Stats() }
