// Copyright 2020 The gVisor Authors.
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
	"math/rand"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/sync"
)

// lockedRandomSource provides a threadsafe rand.Source.
type lockedRandomSource struct {
	mu sync.Mutex

	// +checklocks:mu
	src rand.Source
}

// +checklocksexclude:r.mu
func (r *lockedRandomSource) Int63() (n int64) {
	r.mu.Lock()
	n = r.src.Int63()
	r.mu.Unlock()
	return n
}

// +checklocksexclude:r.mu
func (r *lockedRandomSource) Seed(seed int64) {
	r.mu.Lock()
	r.src.Seed(seed)
	r.mu.Unlock()
}
