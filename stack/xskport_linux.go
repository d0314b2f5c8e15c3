package stack

import (
	"errors"
	"fmt"
	"time"

	"github.com/ustack-dev/ustack/xsk"
	"golang.org/x/sys/unix"
)

// xskPort is a port over an AF_XDP socket; an eventfd lets Interrupt wake
// a worker blocked in poll(2).
type xskPort struct {
	*xsk.Socket
	umem *xsk.UMEM
	efd  int
	fds  [2]unix.PollFd // worker only
}

var _ port = (*xskPort)(nil)

func newXSKPort(s *xsk.Socket) (*xskPort, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	p := &xskPort{Socket: s, umem: s.UMEM(), efd: efd}
	p.fds = [2]unix.PollFd{{Fd: int32(s.FD()), Events: unix.POLLIN}, {Fd: int32(efd), Events: unix.POLLIN}}
	return p, nil
}

func (p *xskPort) Data(d xsk.Desc) []byte   { return p.umem.Data(d) }
func (p *xskPort) Frame(addr uint64) []byte { return p.umem.Frame(addr) }

func (p *xskPort) Wait(timeout time.Duration) error {
	if err := p.WakeupRx(); err != nil {
		return err
	}
	p.fds[0].Revents, p.fds[1].Revents = 0, 0
	_, err := unix.Poll(p.fds[:], int(timeout/time.Millisecond))
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("poll: %w", err)
	}
	if p.fds[1].Revents&unix.POLLIN != 0 {
		var buf [8]byte
		unix.Read(p.efd, buf[:])
	}
	return nil
}

func (p *xskPort) Interrupt() {
	one := [8]byte{1}
	unix.Write(p.efd, one[:])
}

func (p *xskPort) Close() error {
	return errors.Join(p.Socket.Close(), unix.Close(p.efd))
}
