// Copyright 2026 The ustack Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package stack

import (
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// TestNICEndpoints: the per-NIC slice (patch 0089) finds, adds and removes
// what the map it replaces did.
func TestNICEndpoints(t *testing.T) {
	var n nicEndpoints
	if _, ok := n.get(0); ok {
		t.Fatal("an empty set found NIC 0")
	}
	eps := map[tcpip.NICID]*multiPortEndpoint{0: {}, 2: {}, 5: {}}
	for _, nic := range []tcpip.NICID{0, 2, 5} {
		n.set(nic, eps[nic])
	}
	for nic, want := range eps {
		if got, ok := n.get(nic); !ok || got != want {
			t.Errorf("NIC %d: %p, %v; want %p", nic, got, ok, want)
		}
	}
	if _, ok := n.get(3); ok {
		t.Error("NIC 3 found, never added")
	}
	n.remove(2)
	n.remove(3) // not there: nothing happens
	if _, ok := n.get(2); ok || len(n) != 2 {
		t.Errorf("after removing NIC 2: %d entries, NIC 2 found %v", len(n), ok)
	}
	for _, nic := range []tcpip.NICID{0, 5} {
		if got, ok := n.get(nic); !ok || got != eps[nic] {
			t.Errorf("after removing NIC 2, NIC %d: %p, %v", nic, got, ok)
		}
	}
	n.remove(0)
	n.remove(5)
	if len(n) != 0 {
		t.Errorf("%d entries left", len(n))
	}
	// The removed entries' slots hold no endpoint.
	if n = n[:cap(n)]; n[0].ep != nil || n[1].ep != nil {
		t.Error("a removed entry still points at its endpoint")
	}
}
