// Package cli holds what ustack's commands share: running one of a
// command's modes from its arguments, and parsing their flags' values.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Mode runs one of a command's modes with the arguments after its name.
type Mode func(ctx context.Context, args []string) error

// Main runs the mode os.Args[1] names, with a context cancelled by
// SIGINT or SIGTERM, and exits: 2 for a missing or unknown mode, 1 for
// an error (printed as "name: error"), 0 otherwise. "help" and its
// spellings print usage.
func Main(name, usage string, modes map[string]Mode) {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	}
	run, ok := modes[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: unknown mode %q\n\n%s", name, os.Args[1], usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[2:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// ParsePrefixes parses an -addr flag's comma-separated prefixes.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-addr: %w", err)
		}
		prefixes = append(prefixes, p)
	}
	return prefixes, nil
}
