package fastflow

// Serial-number comparisons of TCP sequence numbers and of the uint32
// clocks (RFC 1982): a is before b if b − a, as a signed 32-bit number, is
// positive.

func seqLT(a, b uint32) bool { return int32(a-b) < 0 }
func seqLE(a, b uint32) bool { return int32(a-b) <= 0 }
