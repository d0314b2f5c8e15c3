package xsk

import (
	"errors"
	"testing"
)

// TestUMEMSizeIn64Bits: the mapping's length is the full product of frame
// count and size, even where a 32-bit product wraps.
func TestUMEMSizeIn64Bits(t *testing.T) {
	for _, c := range []struct {
		cfg  UMEMConfig
		want int
	}{
		{UMEMConfig{FrameCount: 4096, FrameSize: 4096}, 16 << 20},
		// 64 queues × 3 × 4096-entry rings of 4 KiB frames: 3 GiB.
		{UMEMConfig{FrameCount: 64 * 3 * 4096, FrameSize: 4096}, 3 << 30},
		// 4 GiB + 4 KiB: 4 KiB in uint32.
		{UMEMConfig{FrameCount: 1<<20 + 1, FrameSize: 4096}, 1<<32 + 4096},
	} {
		got, err := umemSize(c.cfg)
		if err != nil || got != c.want {
			t.Errorf("umemSize(%+v) = %d, %v; want %d", c.cfg, got, err, c.want)
		}
	}
	if _, err := umemSize(UMEMConfig{FrameCount: 1<<24 + 1, FrameSize: 4096}); !errors.Is(err, ErrConfig) {
		t.Errorf("over 64 GiB: %v, want ErrConfig", err)
	}
}
