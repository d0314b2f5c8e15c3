package xsk_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ustack-dev/ustack/vethtest"
	"github.com/ustack-dev/ustack/xsk"
)

func TestMain(m *testing.M) {
	os.Exit(vethtest.Main(m, func() error {
		if n := xsk.OpenSockets(); n != 0 {
			return errors.New("AF_XDP sockets left open")
		}
		return nil
	}))
}

func TestNewUMEMValidates(t *testing.T) {
	for _, c := range []xsk.UMEMConfig{
		{FrameSize: 1000},
		{FrameSize: 3000},
		{FrameSize: 8192},
		{FrameSize: 2048, Headroom: 1024},
	} {
		if u, err := xsk.NewUMEM(c); !errors.Is(err, xsk.ErrConfig) {
			if u != nil {
				u.Close()
			}
			t.Errorf("NewUMEM(%+v) = %v, want ErrConfig", c, err)
		}
	}
	u, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: 16, FrameSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if f := u.Frame(2048 + 300); len(f) != 2048 || &f[0] != &u.Frame(2048)[0] {
		t.Error("Frame does not return the containing frame")
	}
}

func TestOpenValidates(t *testing.T) {
	u, err := xsk.NewUMEM(xsk.UMEMConfig{FrameCount: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for _, c := range []xsk.Config{
		{Interface: "lo", RxSize: 100},
		{Interface: "lo", FillSize: 48},
		{Interface: "lo", Queue: -1},
		{Interface: "lo", RxFrames: 1000},            // more than the umem has
		{Interface: "lo", FillSize: 64, RxFrames: 8}, // cannot feed the fill ring
	} {
		if s, err := xsk.Open(u, c); !errors.Is(err, xsk.ErrConfig) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%+v) = %v, want ErrConfig", c, err)
		}
	}
	if _, err := xsk.Open(u, xsk.Config{Interface: "no-such-if0", FillSize: 32, TxSize: 32}); !errors.Is(err, xsk.ErrNoInterface) || !strings.Contains(err.Error(), "Link not found") {
		t.Errorf("unknown interface: %v, want ErrNoInterface with netlink's error", err)
	}
	if _, err := xsk.Open(u, xsk.Config{Interface: "lo", Queue: 5, FillSize: 32, TxSize: 32}); !errors.Is(err, xsk.ErrConfig) {
		t.Errorf("queue out of range: %v", err)
	}
}
