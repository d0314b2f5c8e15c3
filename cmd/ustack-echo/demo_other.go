//go:build !linux

package main

import (
	"context"

	"github.com/ustack-dev/ustack/stack"
)

func runDemo(context.Context, []string) error { return stack.ErrNotSupported }

func maybeRunDemoRole() {}
