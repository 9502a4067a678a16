package canon

// take returns the next n elements of *slab and extends it over them. A
// slab without room for n is replaced by a new one of min(max(2×cap, lo,
// n), hi) elements (n must be at most hi); the old one lives on in
// whatever was taken from it. The elements hold what was there: zeroes in
// a new slab, old contents in a slab rewound for reuse. The Decoder's and
// the Arena's slabs all grow this way.
func take[T any](slab *[]T, n, lo, hi int) []T {
	s := *slab
	if cap(s)-len(s) < n {
		s = make([]T, 0, min(max(2*cap(s), lo, n), hi))
	}
	start := len(s)
	s = s[:start+n]
	*slab = s
	return s[start : start+n : start+n]
}
