package link

import "golang.org/x/sys/unix"

// pinToCPU restricts the calling OS thread to cpu. Failure leaves the
// thread unpinned: pinning is a tuning, not a correctness, matter.
func pinToCPU(cpu int) {
	var set unix.CPUSet
	set.Set(cpu)
	_ = unix.SchedSetaffinity(0, &set)
}

// osYieldNow gives up the CPU to other runnable threads, if any.
func osYieldNow() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
