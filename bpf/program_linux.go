package bpf

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Program is the loaded steering program with its maps. It is safe for
// concurrent use: the map updates are single syscalls, and mu serializes
// attaching and detaching.
type Program struct {
	objs ustackObjects

	mu      sync.Mutex
	link    link.Link  // guarded by mu
	ifindex int        // guarded by mu
	mode    AttachMode // guarded by mu
}

// Load loads the program and its maps into the kernel. It needs CAP_BPF
// (or root) and, on kernels without memcg accounting, lifts RLIMIT_MEMLOCK.
func Load() (*Program, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("lift memlock rlimit: %w", err)
	}
	p := &Program{ifindex: -1}
	spec, err := loadUstack()
	if err != nil {
		return nil, err
	}
	err = spec.LoadAndAssign(&p.objs, nil)
	if err != nil && !errors.Is(err, unix.EPERM) {
		// Kernels before 5.18 know no multi-buffer XDP (xdp.frags):
		// without the flag the program runs as before, for frames that
		// fit one buffer.
		if prog := spec.Programs["ustack_xdp"]; prog != nil && prog.Flags&unix.BPF_F_XDP_HAS_FRAGS != 0 {
			prog.Flags &^= unix.BPF_F_XDP_HAS_FRAGS
			if err2 := spec.LoadAndAssign(&p.objs, nil); err2 == nil {
				err = nil
			}
		}
	}
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("load xdp program: %w (needs root or CAP_BPF+CAP_NET_ADMIN)", err)
		}
		return nil, fmt.Errorf("load xdp program: %w", err)
	}
	return p, nil
}

// Attach attaches the program to the interface with index ifindex (in the
// calling thread's network namespace) and returns the mode it got. With
// AttachAuto a native-mode failure falls back to generic mode; the caller
// should report that, since generic mode is much slower and on veth leaves
// the peer's TSO on. A stale ustack program attached without a link (for
// example by a killed process of an older version) is replaced; any other
// program is left alone and ErrForeignProgram returned.
func (p *Program) Attach(ifindex int, mode AttachMode) (AttachMode, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.link != nil {
		return p.mode, fmt.Errorf("attach to ifindex %d: already attached to ifindex %d", ifindex, p.ifindex)
	}
	var modes []AttachMode
	switch mode {
	case AttachAuto:
		modes = []AttachMode{AttachNative, AttachGeneric}
	case AttachNative, AttachGeneric:
		modes = []AttachMode{mode}
	default:
		return 0, fmt.Errorf("attach: unknown mode %v", mode)
	}
	var errs []error
	for _, m := range modes {
		l, err := p.attach(ifindex, m)
		if err == nil {
			p.link, p.ifindex, p.mode = l, ifindex, m
			return m, nil
		}
		if errors.Is(err, ErrForeignProgram) {
			return 0, err
		}
		errs = append(errs, fmt.Errorf("%v mode: %w", m, err))
	}
	return 0, fmt.Errorf("attach xdp to ifindex %d: %w", ifindex, errors.Join(errs...))
}

func xdpFlags(m AttachMode) link.XDPAttachFlags {
	if m == AttachGeneric {
		return link.XDPGenericMode
	}
	return link.XDPDriverMode
}

func (p *Program) attach(ifindex int, m AttachMode) (link.Link, error) {
	opts := link.XDPOptions{Program: p.objs.UstackXdp, Interface: ifindex, Flags: xdpFlags(m)}
	l, err := link.AttachXDP(opts)
	if err == nil || !(errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST)) {
		return l, err
	}
	// Something is attached already. Replace it only if it is a stale
	// ustack program held by no link.
	if rerr := removeStale(ifindex); rerr != nil {
		return nil, rerr
	}
	return link.AttachXDP(opts)
}

func removeStale(ifindex int) error {
	nl, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return fmt.Errorf("look up ifindex %d: %w", ifindex, err)
	}
	x := nl.Attrs().Xdp
	if x == nil || !x.Attached || x.ProgId == 0 {
		return fmt.Errorf("ifindex %d reports a busy XDP hook but no program", ifindex)
	}
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(x.ProgId))
	if err != nil {
		return fmt.Errorf("inspect attached program %d: %w", x.ProgId, err)
	}
	info, err := prog.Info()
	prog.Close()
	if err != nil {
		return fmt.Errorf("inspect attached program %d: %w", x.ProgId, err)
	}
	if info.Name != ProgramName {
		return fmt.Errorf("%w: id %d, name %q on %s", ErrForeignProgram, x.ProgId, info.Name, nl.Attrs().Name)
	}
	var flags int
	switch x.AttachMode { // enum xdp_attached in if_link.h
	case 1: // XDP_ATTACHED_DRV
		flags = unix.XDP_FLAGS_DRV_MODE
	case 2: // XDP_ATTACHED_SKB
		flags = unix.XDP_FLAGS_SKB_MODE
	}
	if err := netlink.LinkSetXdpFdWithFlags(nl, -1, flags); err != nil {
		// A live link (another running ustack) cannot be detached
		// through netlink; that is not stale.
		return fmt.Errorf("remove stale ustack program %d from %s (is another ustack running on it?): %w", x.ProgId, nl.Attrs().Name, err)
	}
	return nil
}

// Detach removes the program from its interface. The maps stay usable.
func (p *Program) Detach() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.link == nil {
		return nil
	}
	err := p.link.Close()
	p.link, p.ifindex = nil, -1
	if err != nil {
		return fmt.Errorf("detach xdp: %w", err)
	}
	return nil
}

// Mode returns the mode of the current attachment.
func (p *Program) Mode() AttachMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// ID returns the kernel's id of the loaded program.
func (p *Program) ID() (ebpf.ProgramID, error) {
	info, err := p.objs.UstackXdp.Info()
	if err != nil {
		return 0, fmt.Errorf("program info: %w", err)
	}
	id, _ := info.ID()
	return id, nil
}

// Close detaches the program and releases it and its maps.
func (p *Program) Close() error {
	return errors.Join(p.Detach(), p.objs.Close())
}

// SetSocket puts the AF_XDP socket fd into the XSKMAP slot of queue, so
// frames ustack owns that arrive on that queue go to it. The socket must be
// bound to that queue of the interface the program is attached to.
func (p *Program) SetSocket(queue int, fd int) error {
	if queue < 0 || queue >= MaxQueues {
		return fmt.Errorf("set socket: queue %d outside [0, %d)", queue, MaxQueues)
	}
	if err := p.objs.Xsks.Put(uint32(queue), uint32(fd)); err != nil {
		return fmt.Errorf("set socket for queue %d: %w", queue, err)
	}
	return nil
}

// ClearSocket empties the XSKMAP slot of queue; owned frames arriving there
// are then passed to the kernel.
func (p *Program) ClearSocket(queue int) error {
	if err := p.objs.Xsks.Delete(uint32(queue)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("clear socket for queue %d: %w", queue, err)
	}
	return nil
}

// Run runs the program once on frame in the kernel (BPF_PROG_TEST_RUN),
// without an interface, and returns its verdict. Frames shorter than an
// Ethernet header are rejected by the kernel. The counters are updated as
// for a real frame; queue 0's XSKMAP slot decides between redirect and
// pass.
func (p *Program) Run(frame []byte) (Verdict, error) {
	ret, err := p.objs.UstackXdp.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		return 0, fmt.Errorf("test run: %w", err)
	}
	return Verdict(ret), nil
}
