package stack

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/ustack-dev/ustack/vethtest"
)

// attachXDPPass attaches a program that passes every frame to h's veth
// end: a veth delivers the frames its peer's program sends back
// (XDP_TX) only to an end whose NAPI runs XDP, as a NIC's own ring
// would take them.
func attachXDPPass(t *testing.T, h *vethtest.Host) {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.XDP,
		License:      "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // XDP_PASS
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	var l link.Link
	if err := h.Do(func() (err error) {
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: h.Ifindex})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

// TestPrivilegedXDPSynHandshake: once the worker has answered a
// listener's SYN with a cookie for want of room (here: every SYN, its
// RX-pressure mark at zero), the steering program answers the next ones
// itself, and a kernel client's handshake completes on its SYN-ACK:
// Linux takes the program's cookie, options and timestamp, the listener
// validates the cookie in the ACK, and the connection echoes. The
// client's TX checksum offload is off, as for any sender but a local
// veth peer (the program leaves a partial checksum to the worker), and
// its veth end runs an XDP program, without which veth drops the
// program's answers. With XDPSynOff, and with XDPSynAuto on veth, the
// worker answers every SYN.
func TestPrivilegedXDPSynHandshake(t *testing.T) {
	for _, mode := range []XDPSynMode{XDPSynOn, XDPSynOff, XDPSynAuto} {
		off := mode != XDPSynOn
		t.Run(string(mode), func(t *testing.T) {
			cfg := Config{XDPSyn: mode}
			p, s := newVethStack(t, vethtest.Options{KernelTxChecksumOff: true}, cfg)
			attachXDPPass(t, p.Kernel)
			s.ep.SetRxPressure(0)
			ln, err := s.Listen("tcp", ":7")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			echo(t, ln)
			before := s.Stats()
			const conns = 5
			for i := range conns {
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c, err := kernelDial(ctx, p, "tcp4", netip.AddrPortFrom(ustack4.Addr(), 7).String())
				cancel()
				if err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				if d := time.Since(start); d > 900*time.Millisecond {
					// A lost SYN-ACK: the client sent its SYN again.
					t.Errorf("connection %d took %v", i, d)
				}
				// More than a segment each way: the window scale and
				// timestamps the SYN-ACK offered are in use.
				pingPong(t, c, 20)
				c.Close()
			}
			st := s.Stats()
			inXDP, onWorker := st.Syn.InXDP-before.Syn.InXDP, st.Syn.OnWorker-before.Syn.OnWorker
			valid := st.Syn.CookiesValidated - before.Syn.CookiesValidated
			t.Logf("%d SYNs answered in the steering program, %d on the worker; %d cookies validated, %d failed; %d hand-overs", inXDP, onWorker, valid,
				st.Syn.CookiesFailed-before.Syn.CookiesFailed, st.Syn.XDPRenewed-before.Syn.XDPRenewed)
			if valid != conns {
				t.Errorf("%d cookies validated, want %d", valid, conns)
			}
			if st.Syn.XDPFailed != 0 {
				t.Errorf("%d failed hand-overs to the steering program", st.Syn.XDPFailed)
			}
			switch {
			case off && inXDP != 0:
				t.Errorf("the steering program answered %d SYNs with XDPSyn %s on veth", inXDP, mode)
			case !off && inXDP < conns-1:
				t.Errorf("the steering program answered %d SYNs, want all but the first of %d", inXDP, conns)
			}
		})
	}
}
