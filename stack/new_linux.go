package stack

import (
	"errors"
	"fmt"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/xsk"
	"golang.org/x/sys/unix"
)

// A veth accepts native XDP at any MTU because the steering program
// declares multi-buffer support (xdp.frags): without it, the kernel caps
// the MTU at 3506 with 4 KiB pages (veth_xdp_set). A frame that does not
// fit one UMEM frame then arrives as a chain, which needs the socket bound
// with XDP_USE_SG.

// pageMaxXDPMTU is the largest MTU whose frames native XDP gets in one
// buffer with 4 KiB pages: 4096 - XDP_PACKET_HEADROOM (256) -
// sizeof(struct skb_shared_info) (320) - ETH_HLEN (14), as veth_xdp_set
// computes it (Linux 6.18).
const pageMaxXDPMTU = 3506

// maxMultiBufferMTU is the largest MTU ustack runs on: a 16 KiB frame,
// four UMEM frames of 4 KiB per chain.
const maxMultiBufferMTU = 16384 - ethHeaderLen

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
	lay, err := cfg.layout(mtu)
	if err != nil {
		return nil, err
	}
	// A frame larger than a UMEM frame (less the kernel's RX headroom)
	// comes and goes as a chain of frames: multi-buffer AF_XDP. So may
	// one above 3506 bytes of MTU, which a page no longer holds beside
	// the kernel's headroom and skb_shared_info: veth (and drivers alike)
	// then hand XDP the rest as fragments.
	multiBuffer := mtu > min(cfg.FrameSize-xdpPacketHeadroom-ethHeaderLen, pageMaxXDPMTU)
	if mtu > maxMultiBufferMTU {
		return nil, fmt.Errorf("%w: %s has MTU %d, ustack takes at most %d", ErrConfig, cfg.Interface, mtu, maxMultiBufferMTU)
	}
	for _, a := range cfg.Addrs {
		for _, k := range ifc.Addrs {
			if k.Addr() == a.Addr() {
				return nil, fmt.Errorf("%w: %v is the kernel's own address on %s; ustack needs addresses of its own (the kernel would answer for this one too)", ErrConfig, a.Addr(), cfg.Interface)
			}
		}
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
	umem, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: uint32(cfg.Queues) * (lay.rxFrames + lay.txFrames), FrameSize: cfg.FrameSize})
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
			RxFrames: lay.rxFrames, TxFrames: lay.txFrames, MultiBuffer: multiBuffer,
		})
		if err != nil {
			if errors.Is(err, xsk.ErrMultiBuffer) {
				return nil, fmt.Errorf("%w: %s has MTU %d, more than a %d-byte UMEM frame holds, and %w", ErrConfig, cfg.Interface, mtu, cfg.FrameSize, err)
			}
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
	info := linkInfo{mtu: mtu, mac: ifc.MAC, partialChecksums: ifc.Kind == "veth", multiBuffer: multiBuffer}
	s, err := newStack(cfg, ios, info, prog)
	if err != nil {
		return nil, err
	}
	s.prog = prog
	s.teardown = undo
	// The steering program's SYN answers (Config.XDPSyn): never on veth
	// unless asked for, since the peer end drops them unless it runs
	// XDP. Config.Debug.NoFastPath turns them off too.
	if cfg.XDPSyn.answers(ifc.Kind) && !cfg.Debug.NoFastPath {
		if err := s.answerSynsInXDP(prog); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}
