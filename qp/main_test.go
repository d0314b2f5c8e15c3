package qp

import (
	"os"
	"testing"

	"github.com/ustack-dev/ustack/vethtest"
)

// TestMain fails the run if tests leak goroutines (a queue pair's reader
// or transmitter left running), namespaces or BPF objects.
func TestMain(m *testing.M) { os.Exit(vethtest.Main(m)) }
