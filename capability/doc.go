// Package capability names the optional capabilities of ustack's TCP
// connections: small interfaces beyond net.Conn that a protocol engine
// running on ustack's worker needs.
//
//   - WorkerPoller moves the connection's reading onto the stack's worker:
//     the bytes are handed to a consumer right after the TCP processing
//     that brought them, with no goroutine hand-off.
//   - TryWriter writes what the send buffer takes now and never waits:
//     how code running on the worker writes.
//   - LendWriter writes without copying: netstack reads the bytes in
//     place until they are acknowledged, then tells their Lender.
//
// The net.Conn values ustack's TCP hands out (stack.Stack's Listen, Dial
// and DialContext) implement all of them; a kernel connection, or any
// other net.Conn, implements none. Callers assert them on whatever
// net.Conn they were given and fall back to plain net.Conn without:
//
//	if wp, ok := conn.(capability.WorkerPoller); ok { ... }
//
// Package stack names the same interfaces (stack.WorkerPoller and the
// others are aliases of these). This package imports nothing of ustack's,
// so that a user of the capabilities, such as package qp, does not pull
// in netstack when it runs over kernel connections.
package capability
