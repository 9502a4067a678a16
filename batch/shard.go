package batch

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one of Count shards, Index from 0 to Count-1 (as Kubernetes'
// JOB_COMPLETION_INDEX counts). The zero value means no sharding.
type Shard struct {
	Index, Count int
}

// String is "I/N", as --shard takes it.
func (s Shard) String() string {
	if s.Count == 0 {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// ParseShard parses "I/N" with 0 <= I < N.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want I/N, I from 0 to N-1", s)
	}
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want I/N with N >= 1 and I from 0 to N-1 (a CI system that counts from 1 passes its index minus one)", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// Has reports whether the entry at manifest position index belongs to s:
// index mod Count == Index. Position, not name: the shards are balanced
// (their sizes differ by at most one) and the function needs nothing but
// the manifest, which every shard of a matrix reads whole.
func (s Shard) Has(index int) bool {
	if s.Count <= 1 {
		return true
	}
	return index%s.Count == s.Index
}

// Select returns the entries of shard s, in manifest order.
func Select(entries []Entry, s Shard) []Entry {
	var out []Entry
	for _, e := range entries {
		if s.Has(e.Index) {
			out = append(out, e)
		}
	}
	return out
}
