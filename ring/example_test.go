package ring_test

import (
	"fmt"

	"github.com/ustack-dev/ustack/ring"
)

// A producer reserves slots, fills them and submits them; the consumer
// peeks, reads and releases them.
func ExampleNew() {
	prod, cons, err := ring.New[uint64](8)
	if err != nil {
		panic(err)
	}
	idx, n := prod.Reserve(3)
	for i := uint32(0); i < n; i++ {
		*prod.At(idx + i) = uint64(100 + i)
	}
	prod.Submit(n)

	idx, n = cons.Peek(8)
	for i := uint32(0); i < n; i++ {
		fmt.Println(*cons.At(idx + i))
	}
	cons.Release(n)
	// Output:
	// 100
	// 101
	// 102
}
