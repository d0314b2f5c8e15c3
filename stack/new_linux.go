package stack

import (
	"errors"
	"fmt"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/xsk"
	"golang.org/x/sys/unix"
)

// vethMaxXDPMTU is the largest veth MTU native XDP accepts with 4 KiB
// pages: 4096 - XDP_PACKET_HEADROOM (256) - sizeof(struct
// skb_shared_info) (320) - ETH_HLEN (14), as veth_xdp_set computes it
// (Linux 6.18; TestPrivilegedMTULimits checks it).
const vethMaxXDPMTU = 3506

// New attaches ustack to cfg.Interface (in the calling thread's network
// namespace): it loads and attaches the XDP steering program, opens one
// AF_XDP socket per queue on a shared UMEM, starts the workers and brings
// up netstack with cfg.Addrs. On failure it undoes everything it did.
func New(cfg Config) (_ *Stack, err error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Interface == "" {
		return nil, fmt.Errorf("%w: no interface", ErrConfig)
	}
	ifc, err := xsk.LookupInterface(cfg.Interface)
	if err != nil {
		if errors.Is(err, xsk.ErrNoInterface) {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return nil, err
	}
	if nq := ifc.RxQueues; nq > 0 && cfg.Queues > nq {
		return nil, fmt.Errorf("%w: %d queues requested, %s has %d", ErrConfig, cfg.Queues, cfg.Interface, nq)
	}
	mtu := uint32(ifc.MTU)
	if maxMTU := cfg.FrameSize - unix.XDP_PACKET_HEADROOM - ethHeaderLen; mtu > maxMTU {
		return nil, fmt.Errorf("%w: %s has MTU %d, frames of %d bytes hold at most %d", ErrConfig, cfg.Interface, mtu, cfg.FrameSize, maxMTU)
	}
	for _, a := range cfg.Addrs {
		for _, k := range ifc.Addrs {
			if k.Addr() == a.Addr() {
				return nil, fmt.Errorf("%w: %v is the kernel's own address on %s; ustack needs addresses of its own (the kernel would answer for this one too)", ErrConfig, a.Addr(), cfg.Interface)
			}
		}
	}
	if ifc.Kind == "veth" && !cfg.ForceGenericXDP && mtu > vethMaxXDPMTU {
		// The kernel refuses native XDP on a veth whose peer's MTU
		// leaves no room in a page for the headroom and skb_shared_info
		// (veth_xdp_set); generic mode would then take every packet
		// through an skb copy on queue 0 and the peer keep TSO on.
		return nil, fmt.Errorf("%w: %s has MTU %d, native XDP on veth takes at most %d (lower both ends' MTU, or ForceGenericXDP)", ErrConfig, cfg.Interface, mtu, vethMaxXDPMTU)
	}
	if len(ifc.MAC) != 6 {
		return nil, fmt.Errorf("%w: %s has no Ethernet address", ErrConfig, cfg.Interface)
	}
	var undo []func() error
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	umem, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: uint32(cfg.Queues) * (cfg.RxRingSize + cfg.RingSize), FrameSize: cfg.FrameSize})
	if err != nil {
		return nil, err
	}
	undo = append(undo, umem.Close)
	var ios []frameIO
	steer := bpf.Steering{Ifindex: ifc.Index, Mode: bpf.AttachAuto}
	if cfg.ForceGenericXDP {
		steer.Mode = bpf.AttachGeneric
	}
	for q := 0; q < cfg.Queues; q++ {
		sock, err := xsk.Open(umem, xsk.Config{
			Interface: cfg.Interface, Queue: q,
			RxSize: cfg.RxRingSize, TxSize: cfg.RingSize, FillSize: cfg.RxRingSize, CompletionSize: cfg.RingSize,
			RxFrames: cfg.RxRingSize, TxFrames: cfg.RingSize,
		})
		if err != nil {
			return nil, err
		}
		io := newXSKIO(sock)
		undo = append(undo, io.Close)
		ios = append(ios, io)
		steer.Sockets = append(steer.Sockets, sock.FD())
	}
	for _, a := range cfg.Addrs {
		steer.Owned = append(steer.Owned, bpf.Owned{Addr: a.Addr(), Flags: bpf.OwnHost})
	}
	prog, got, err := bpf.Setup(steer)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: %w", ErrPermission, err)
		}
		return nil, err
	}
	undo = append(undo, prog.Close)
	if got == bpf.AttachGeneric && !cfg.ForceGenericXDP {
		cfg.Logf("ustack: %s: native XDP unavailable, using generic mode (slower; on veth the peer keeps TSO on)", cfg.Interface)
	}
	// A veth peer is the local kernel, which hands over TCP and UDP with
	// checksums left for offload unless its TX checksum offload is off.
	info := linkInfo{mtu: mtu, mac: ifc.MAC, partialChecksums: ifc.Kind == "veth"}
	s, err := newStack(cfg, ios, info, prog)
	if err != nil {
		return nil, err
	}
	s.prog = prog
	s.teardown = undo
	return s, nil
}
