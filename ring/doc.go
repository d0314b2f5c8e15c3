// Package ring implements single-producer/single-consumer ring views over
// shared memory, in the shape of the four AF_XDP rings (fill, completion, RX
// and TX) and usable for any in-process queue that needs the same semantics.
//
// A ring is an array of 2^k descriptors plus two free-running 32-bit indices:
// the producer index, written only by the producer, and the consumer index,
// written only by the consumer. Entries in [consumer, producer) are owned by
// the consumer; the rest are owned by the producer.
//
// Data moves through a ring in two steps on each side:
//
//	producer: Reserve(n) → fill descriptors via At(idx+i) → Submit(k) (or Cancel)
//	consumer: Peek(n)    → read descriptors via At(idx+i) → Release(k) (or Cancel)
//
// Each view caches the peer's index and only re-reads the shared word when
// the cache says the ring looks full (producer) or empty (consumer), so a
// batch costs one shared-memory load and one store. The producer publishes
// descriptors with a release store of the producer index after writing them;
// the consumer acquires them with a load of that index before reading, and
// likewise in the other direction for the consumer index. Go's sync/atomic
// operations are sequentially consistent, which is at least that strong.
//
// The views are not safe for concurrent use: one goroutine may own the
// Producer and another the Consumer.
package ring
