package ring

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Offsets locates a ring's parts inside a mapped memory region, as the
// kernel reports them for AF_XDP rings (XDP_MMAP_OFFSETS).
type Offsets struct {
	Producer, Consumer, Desc, Flags uint64
}

func mapShared[T any](mem []byte, off Offsets, size uint32) (shared[T], error) {
	if err := checkSize(size); err != nil {
		return shared[T]{}, err
	}
	var zero T
	descEnd := off.Desc + uint64(size)*uint64(unsafe.Sizeof(zero))
	for _, o := range []uint64{off.Producer, off.Consumer, off.Flags} {
		if o+4 > uint64(len(mem)) || o%4 != 0 {
			return shared[T]{}, fmt.Errorf("ring index offset %d outside or misaligned in %d-byte mapping", o, len(mem))
		}
	}
	if descEnd > uint64(len(mem)) || off.Desc%uint64(unsafe.Alignof(zero)) != 0 {
		return shared[T]{}, fmt.Errorf("ring descriptors [%d, %d) outside or misaligned in %d-byte mapping", off.Desc, descEnd, len(mem))
	}
	base := unsafe.Pointer(unsafe.SliceData(mem))
	return shared[T]{
		producer: (*atomic.Uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*atomic.Uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*atomic.Uint32)(unsafe.Add(base, off.Flags)),
		descs:    unsafe.Slice((*T)(unsafe.Add(base, off.Desc)), size),
		mask:     size - 1,
	}, nil
}

// MapProducer returns the producing view of a ring that lives in mem (for
// AF_XDP, the mapping of the fill or TX ring). mem must stay mapped for as
// long as the view is used.
func MapProducer[T any](mem []byte, off Offsets, size uint32) (*Producer[T], error) {
	s, err := mapShared[T](mem, off, size)
	if err != nil {
		return nil, err
	}
	return newProducer(s), nil
}

// MapConsumer returns the consuming view of a ring that lives in mem (for
// AF_XDP, the mapping of the RX or completion ring). mem must stay mapped
// for as long as the view is used.
func MapConsumer[T any](mem []byte, off Offsets, size uint32) (*Consumer[T], error) {
	s, err := mapShared[T](mem, off, size)
	if err != nil {
		return nil, err
	}
	return newConsumer(s), nil
}
