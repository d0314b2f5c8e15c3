package vethtest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Addresses every Pair uses. Each Pair lives in namespaces of its own, so
// they repeat safely across pairs.
var (
	KernelIPv4 = netip.MustParseAddr("198.18.0.1")
	KernelIPv6 = netip.MustParseAddr("2001:2::1")
	// UstackHostIPv4 and UstackHostIPv6 are the Ustack host's kernel's own
	// addresses: not owned by ustack.
	UstackHostIPv4 = netip.MustParseAddr("198.18.0.2")
	UstackHostIPv6 = netip.MustParseAddr("2001:2::2")
	// UstackIPv4 and UstackIPv6 are free on the Ustack host's link, for
	// ustack to own.
	UstackIPv4 = netip.MustParseAddr("198.18.0.10")
	UstackIPv6 = netip.MustParseAddr("2001:2::10")
)

// ErrOptions reports invalid Options.
var ErrOptions = errors.New("vethtest: invalid options")

// MaxQueues is the most queues a Pair's ends have: as many as ustack's
// XDP program serves (bpf.MaxQueues, which package bpf's tests, importers
// of this package, check against it).
const MaxQueues = 64

// Prefix lengths of the pair's subnets.
const (
	PrefixLen4 = 24
	PrefixLen6 = 64
)

// Options configures a Pair. The zero value is a single-queue pair with MTU
// 1500 and both ends as the kernel creates them: in particular the Kernel
// end's TX checksum offload stays on, as on any new veth pair, so it sends
// TCP and UDP with checksums left for offload (CHECKSUM_PARTIAL).
type Options struct {
	// Queues is the number of RX and TX queues on each veth end (default 1).
	// Native XDP on veth needs the XDP end to have at least as many RX
	// queues as its peer has TX queues, so both ends get the same number.
	Queues int
	// MTU of both ends (default 1500). Native XDP on veth needs ≤ 3506.
	MTU int
	// KernelTxChecksumOff turns TX checksum offload off at the Kernel end,
	// so it sends complete checksums.
	KernelTxChecksumOff bool
	// KernelGRO turns GRO on at the Kernel end (off on a new veth), so the
	// kernel coalesces the MTU-sized frames ustack sends as it would
	// behind a NIC, instead of running its TCP once per frame.
	KernelGRO bool
}

// Host is one namespace of a Pair and its veth end.
type Host struct {
	// Namespace is the name of the network namespace (under /run/netns).
	Namespace string
	// Link is the name of the veth end inside the namespace.
	Link string
	// Ifindex is the veth end's interface index inside the namespace.
	Ifindex int
	// MAC is the veth end's hardware address.
	MAC net.HardwareAddr
	// IPv4 and IPv6 are the kernel's own addresses on the veth end.
	IPv4, IPv6 netip.Addr

	ns netns.NsHandle
	nl *netlink.Handle
}

// Do runs fn on an OS thread switched into the host's namespace and returns
// its error. Sockets, XDP attachments and netlink calls made inside fn
// belong to the namespace; file descriptors keep working after fn returns,
// from any goroutine. Goroutines started by fn do not inherit the
// namespace. The thread is discarded afterwards rather than switched back.
func (h *Host) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		returned := false
		defer func() {
			// fn called runtime.Goexit (t.Fatal, for one).
			if !returned {
				errc <- fmt.Errorf("in namespace %s: function exited without returning", h.Namespace)
			}
		}()
		// Never unlocked: the runtime ends the thread with the goroutine,
		// so no other goroutine runs in the namespace by accident.
		runtime.LockOSThread()
		if err := netns.Set(h.ns); err != nil {
			returned = true
			errc <- fmt.Errorf("enter namespace %s: %w", h.Namespace, err)
			return
		}
		err := fn()
		returned = true
		errc <- err
	}()
	return <-errc
}

// Netlink returns a netlink handle bound to the host's namespace. It is
// closed with the Pair.
func (h *Host) Netlink() *netlink.Handle { return h.nl }

// SetTxChecksum turns the host's veth end's TX checksum offload on or off
// (ethtool -K tx). With it on, the kernel sends TCP and UDP with checksums
// left for offload (CHECKSUM_PARTIAL).
func (h *Host) SetTxChecksum(on bool) error {
	return h.Do(func() error { return setTxChecksum(h.Link, on) })
}

// Pair is two namespaces joined by a veth pair.
type Pair struct {
	// Kernel is the peer host, running only the Linux stack.
	Kernel *Host
	// Ustack is the host where ustack attaches.
	Ustack *Host
	// Opts are the options the pair was built with, defaults filled in.
	Opts Options
}

var (
	liveMu sync.Mutex
	live   = map[string]bool{} // namespaces created and not yet deleted
)

func randomID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// newNamespace creates a named namespace from a throwaway thread, so no
// goroutine's thread is left switched into it.
func newNamespace(name string) (netns.NsHandle, error) {
	type result struct {
		h   netns.NsHandle
		err error
	}
	c := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with us
		h, err := netns.NewNamed(name)
		c <- result{h, err}
	}()
	r := <-c
	if r.err != nil {
		return r.h, fmt.Errorf("create namespace %s: %w", name, r.err)
	}
	liveMu.Lock()
	live[name] = true
	liveMu.Unlock()
	return r.h, nil
}

func deleteNamespace(name string) error {
	liveMu.Lock()
	delete(live, name)
	liveMu.Unlock()
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	return nil
}

// New builds a Pair. On failure it removes whatever it had created. The
// caller must Close the Pair; tests should use NewT.
func New(opts Options) (_ *Pair, err error) {
	if opts.Queues == 0 {
		opts.Queues = 1
	}
	if opts.MTU == 0 {
		opts.MTU = 1500
	}
	if opts.Queues < 1 || opts.Queues > MaxQueues {
		return nil, fmt.Errorf("%w: queues %d outside [1, %d]", ErrOptions, opts.Queues, MaxQueues)
	}
	if opts.MTU < 1280 || opts.MTU > 65535 {
		return nil, fmt.Errorf("%w: mtu %d outside [1280, 65535] (IPv6 needs 1280)", ErrOptions, opts.MTU)
	}
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("vethtest: network namespaces need Linux (this is %s)", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("vethtest: creating namespaces needs root (euid %d)", os.Geteuid())
	}
	id, err := randomID()
	if err != nil {
		return nil, fmt.Errorf("vethtest: random id: %w", err)
	}
	p := &Pair{
		Kernel: &Host{Namespace: "ust-" + id + "-k", Link: "uk" + id, IPv4: KernelIPv4, IPv6: KernelIPv6, ns: -1},
		Ustack: &Host{Namespace: "ust-" + id + "-u", Link: "uu" + id, IPv4: UstackHostIPv4, IPv6: UstackHostIPv6, ns: -1},
		Opts:   opts,
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	for _, h := range []*Host{p.Kernel, p.Ustack} {
		if h.ns, err = newNamespace(h.Namespace); err != nil {
			return nil, err
		}
		if h.nl, err = netlink.NewHandleAt(h.ns); err != nil {
			return nil, fmt.Errorf("netlink handle in %s: %w", h.Namespace, err)
		}
	}
	q := uint32(opts.Queues)
	veth := &netlink.Veth{
		LinkAttrs:       netlink.LinkAttrs{Name: p.Kernel.Link, MTU: opts.MTU, NumTxQueues: opts.Queues, NumRxQueues: opts.Queues},
		PeerName:        p.Ustack.Link,
		PeerNamespace:   netlink.NsFd(p.Ustack.ns),
		PeerNumTxQueues: q,
		PeerNumRxQueues: q,
		PeerMTU:         uint32(opts.MTU),
	}
	if err := p.Kernel.nl.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create veth %s/%s: %w", p.Kernel.Link, p.Ustack.Link, err)
	}
	for _, h := range []*Host{p.Kernel, p.Ustack} {
		if err := h.setUp(); err != nil {
			return nil, err
		}
	}
	if opts.KernelTxChecksumOff {
		if err := p.Kernel.Do(func() error { return setTxChecksum(p.Kernel.Link, false) }); err != nil {
			return nil, fmt.Errorf("turn off tx checksum offload on %s: %w", p.Kernel.Link, err)
		}
	}
	if opts.KernelGRO {
		if err := p.Kernel.Do(func() error { return setGRO(p.Kernel.Link, true) }); err != nil {
			return nil, fmt.Errorf("turn on gro on %s: %w", p.Kernel.Link, err)
		}
	}
	return p, nil
}

func (h *Host) setUp() error {
	lo, err := h.nl.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("%s: find lo: %w", h.Namespace, err)
	}
	if err := h.nl.LinkSetUp(lo); err != nil {
		return fmt.Errorf("%s: set lo up: %w", h.Namespace, err)
	}
	l, err := h.nl.LinkByName(h.Link)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", h.Namespace, h.Link, err)
	}
	h.Ifindex = l.Attrs().Index
	h.MAC = l.Attrs().HardwareAddr
	for _, a := range []struct {
		ip   netip.Addr
		bits int
	}{{h.IPv4, PrefixLen4}, {h.IPv6, PrefixLen6}} {
		addr := &netlink.Addr{
			IPNet: &net.IPNet{IP: a.ip.AsSlice(), Mask: net.CIDRMask(a.bits, a.ip.BitLen())},
			// No duplicate address detection: the address is usable at
			// once, and nothing else on this link could hold it.
			Flags: ifaFlagNoDAD,
		}
		if err := h.nl.AddrAdd(l, addr); err != nil {
			return fmt.Errorf("%s: add %v to %s: %w", h.Namespace, a.ip, h.Link, err)
		}
	}
	if err := h.nl.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s: set %s up: %w", h.Namespace, h.Link, err)
	}
	return nil
}

// Close deletes both namespaces (and with them the veth pair). It is safe
// to call more than once.
func (p *Pair) Close() error {
	var errs []error
	for _, h := range []*Host{p.Kernel, p.Ustack} {
		if h.nl != nil {
			h.nl.Close()
			h.nl = nil
		}
		if h.ns >= 0 {
			h.ns.Close()
			h.ns = -1
			errs = append(errs, deleteNamespace(h.Namespace))
		}
	}
	return errors.Join(errs...)
}

// NewT builds a Pair for a test, registers its Close with t.Cleanup and
// fails the test if it cannot be built.
func NewT(t testing.TB, opts Options) *Pair {
	t.Helper()
	Privileged(t)
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// Live returns the namespaces this process created and has not deleted.
func Live() []string {
	liveMu.Lock()
	defer liveMu.Unlock()
	var names []string
	for n := range live {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
