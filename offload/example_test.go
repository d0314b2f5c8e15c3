package offload_test

import (
	"fmt"

	"github.com/ustack-dev/ustack/offload"
)

// The checksum of an IPv4 header is stored in it; summing the header with
// the checksum in place then folds to 0xffff.
func ExampleChecksum() {
	hdr := []byte{0x45, 0, 0, 0x54, 0, 0, 0x40, 0, 0x40, 0x01, 0, 0, 198, 18, 0, 1, 198, 18, 0, 10}
	sum := offload.Checksum(hdr)
	hdr[10], hdr[11] = byte(sum>>8), byte(sum)
	fmt.Printf("%#04x %#04x\n", sum, offload.Fold(offload.Sum(hdr, 0)))
	// Output: 0xae79 0xffff
}
