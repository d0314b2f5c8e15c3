// Package child runs a benchmark's servers and clients as child processes
// of the running binary, each inside a network namespace and on CPUs
// chosen by a Placement, and reads what the kernel knows of them (CPU
// time, resident memory, allowed CPUs).
//
// A child re-executes the same binary with a role named in an environment
// variable (so the same code works under go run and go test), talks to
// its parent in lines on stdin and stdout, and keeps its stderr for the
// parent's error messages. Package bench and ustack-echo's demo share it,
// so that the demo's processes sit where the benchmark's do.
package child
