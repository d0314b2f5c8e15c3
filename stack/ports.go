package stack

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
)

// portOwner is told which (address, protocol, port) ustack sockets use, so
// the steering program sends their traffic to ustack. *bpf.Program
// satisfies it; tests use a fake.
type portOwner interface {
	OwnPort(addr netip.Addr, proto bpf.Protocol, port uint16) error
	DisownPort(addr netip.Addr, proto bpf.Protocol, port uint16) error
}

var _ portOwner = (*bpf.Program)(nil)

type portKey struct {
	addr  netip.Addr
	proto bpf.Protocol
	port  uint16
}

// portTable reference-counts the ports ustack sockets use and keeps the
// steering program's owned_ports table in step: a port is owned while any
// listener or connection holds it. TCP connections hold it until netstack
// has finished closing them (or reached TIME_WAIT), so the peer's last
// FIN/ACKs still reach ustack.
type portTable struct {
	owner portOwner

	mu      sync.Mutex
	refs    map[portKey]int
	closing []closingConn // TCP connections waiting to finish closing
	closed  bool
	stop    chan struct{}
	done    chan struct{}
}

type closingConn struct {
	ep      tcpip.Endpoint
	keys    []portKey
	expires time.Time
}

var errPortTableClosed = errors.New("stack closing")

// closeGrace bounds how long a closing connection holds its port.
const closeGrace = 30 * time.Second

func newPortTable(owner portOwner) *portTable {
	t := &portTable{owner: owner, refs: map[portKey]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	go t.reap()
	return t
}

func (t *portTable) acquire(k portKey) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errPortTableClosed
	}
	if t.refs[k] == 0 && t.owner != nil {
		if err := t.owner.OwnPort(k.addr, k.proto, k.port); err != nil {
			return fmt.Errorf("steer port %d to ustack: %w", k.port, err)
		}
	}
	t.refs[k]++
	return nil
}

// acquireAll acquires every key or none.
func (t *portTable) acquireAll(keys []portKey) error {
	for i, k := range keys {
		if err := t.acquire(k); err != nil {
			t.releaseAll(keys[:i])
			return err
		}
	}
	return nil
}

func (t *portTable) releaseAll(keys []portKey) {
	for _, k := range keys {
		t.release(k)
	}
}

func (t *portTable) release(k portKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseLocked(k)
}

func (t *portTable) releaseLocked(k portKey) {
	if t.refs[k] == 0 {
		return
	}
	t.refs[k]--
	if t.refs[k] == 0 {
		delete(t.refs, k)
		if t.owner != nil && !t.closed {
			// Best effort: a failure leaves a stale entry that only
			// steers frames to a port nobody listens on.
			_ = t.owner.DisownPort(k.addr, k.proto, k.port)
		}
	}
}

// releaseAfterClose releases keys once ep has finished closing.
func (t *portTable) releaseAfterClose(ep tcpip.Endpoint, keys []portKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closing = append(t.closing, closingConn{ep: ep, keys: keys, expires: time.Now().Add(closeGrace)})
}

func finishedClosing(ep tcpip.Endpoint) bool {
	switch tcp.EndpointState(ep.State()) {
	case tcp.StateClose, tcp.StateError, tcp.StateTimeWait:
		return true
	}
	return false
}

func (t *portTable) reap() {
	defer close(t.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		t.mu.Lock()
		kept := t.closing[:0]
		for _, c := range t.closing {
			if finishedClosing(c.ep) || now.After(c.expires) {
				for _, k := range c.keys {
					t.releaseLocked(k)
				}
			} else {
				kept = append(kept, c)
			}
		}
		clear(t.closing[len(kept):])
		t.closing = kept
		t.mu.Unlock()
	}
}

// owned returns the ports currently held, for tests and stats.
func (t *portTable) owned() map[portKey]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[portKey]int, len(t.refs))
	for k, v := range t.refs {
		m[k] = v
	}
	return m
}

// close stops the reaper and removes every entry from the owner's table.
func (t *portTable) close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	for k := range t.refs {
		if t.owner != nil {
			_ = t.owner.DisownPort(k.addr, k.proto, k.port)
		}
	}
	clear(t.refs)
	t.closing = nil
	t.mu.Unlock()
	close(t.stop)
	<-t.done
}
