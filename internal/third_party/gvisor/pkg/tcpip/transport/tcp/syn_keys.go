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

package tcp

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/dchest/siphash"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
)

// ustack: SYN cookies and timestamp offsets keyed with SipHash-2-4, as
// Linux keys them (cookie_hash, secure_tcp_ts_off), so that a program
// outside the stack that holds the keys (ustack's XDP program) answers a
// SYN with the very SYN-ACK a listener answering with a cookie would
// send, and the listener validates the ACK that completes it.
//
// The inputs, in this order (addresses as on the wire, numbers big
// endian):
//   - a cookie's hash: local address, remote address, local port, remote
//     port, the 32-bit timestamp slot (16 bytes over IPv4, 40 over IPv6);
//   - a timestamp offset: source (local) address, destination address;
//     the hash's low 32 bits.
//
// The key halves are the key's two little-endian 64-bit words.

// SynKeys are a TCP's secrets for SYN cookies and timestamp offsets.
type SynKeys struct {
	// Cookie are the keys of a cookie's two hashes (createCookie's
	// nonce index 0 and 1).
	Cookie [2][16]byte
	// TSOffset is the key of the per-peer timestamp offset.
	TSOffset [16]byte
}

// SynSecrets returns s's TCP's keys.
func SynSecrets(s *stack.Stack) (SynKeys, error) {
	p, ok := s.TransportProtocolInstance(ProtocolNumber).(*protocol)
	if !ok {
		return SynKeys{}, errors.New("tcp: the stack has no TCP")
	}
	return SynKeys{Cookie: p.cookieKeys, TSOffset: p.tsOffsetSecret}, nil
}

// CookieHash is a cookie's hash under key i for id and the timestamp
// slot ts, as a listener computes it.
func (k *SynKeys) CookieHash(i int, id stack.TransportEndpointID, ts uint32) uint32 {
	return cookieSipHash(&k.Cookie[i], id, ts)
}

// MakeCookie is the SYN cookie a listener answers a SYN of id with
// sequence number seq with, at timestamp slot ts (CookieSlot), carrying
// the MSS table index data.
func (k *SynKeys) MakeCookie(id stack.TransportEndpointID, seq, data, ts uint32) uint32 {
	v := k.CookieHash(0, id, 0) + seq + (ts << tsOffset)
	return v + (k.CookieHash(1, id, ts)+data)&hashMask
}

// TSOffsetOf is the timestamp offset the stack uses towards dst from src.
func (k *SynKeys) TSOffsetOf(src, dst tcpip.Address) uint32 {
	return tsOffsetSipHash(&k.TSOffset, src, dst)
}

// CookieSlot is the cookie timestamp slot at monotonic time mono (the
// stack's clock's NowMonotonic since its zero).
func CookieSlot(mono time.Duration) uint32 {
	return uint32(mono.Seconds()) >> 6 & tsMask
}

// CookieMSSIndex is the index in the cookie's MSS table the SYN's MSS
// option mss encodes to.
func CookieMSSIndex(mss uint16) uint32 { return encodeMSS(mss) }

// CookieMSS returns the MSS at index i of the cookie's MSS table.
func CookieMSS(i uint32) uint16 { return mssTable[i&3] }

func sipKey(key *[16]byte) (uint64, uint64) {
	return binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])
}

func cookieSipHash(key *[16]byte, id stack.TransportEndpointID, ts uint32) uint32 {
	var in [2*16 + 8]byte
	n := copy(in[:], id.LocalAddress.AsSlice())
	n += copy(in[n:], id.RemoteAddress.AsSlice())
	binary.BigEndian.PutUint16(in[n:], id.LocalPort)
	binary.BigEndian.PutUint16(in[n+2:], id.RemotePort)
	binary.BigEndian.PutUint32(in[n+4:], ts)
	k0, k1 := sipKey(key)
	return uint32(siphash.Hash(k0, k1, in[:n+8]))
}

func tsOffsetSipHash(key *[16]byte, src, dst tcpip.Address) uint32 {
	var in [2 * 16]byte
	n := copy(in[:], src.AsSlice())
	n += copy(in[n:], dst.AsSlice())
	k0, k1 := sipKey(key)
	return uint32(siphash.Hash(k0, k1, in[:n]))
}
