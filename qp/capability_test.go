package qp

import "github.com/ustack-dev/ustack/stack"

// qp keeps its own copies of stack's capability interfaces, so that it
// does not import netstack for users of kernel connections; these
// assignments fail to compile if the two drift apart.
var (
	_ workerPolled       = stack.WorkerPoller(nil)
	_ stack.WorkerPoller = workerPolled(nil)
	_ tryWriter          = stack.TryWriter(nil)
	_ stack.TryWriter    = tryWriter(nil)
	_ lendWriter         = stack.LendWriter(nil)
	_ stack.LendWriter   = lendWriter(nil)
)
