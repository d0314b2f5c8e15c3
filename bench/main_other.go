//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "bench: needs Linux (network namespaces, XDP and AF_XDP)")
	os.Exit(1)
}
