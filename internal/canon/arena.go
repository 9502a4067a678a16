package canon

// Arena hands out the member and item slices of values that live only
// until the next Reset, from slabs it reuses: a writer that builds one
// record's tree, encodes it and forgets it builds the next in the same
// memory instead of allocating every object and array afresh. The zero
// Arena is ready to use; it is not safe for concurrent use.
type Arena struct {
	members []Member
	items   []Value
}

// Slab sizes, in elements: a typical record needs a few dozen; a slab
// that fills is replaced by one twice its size, up to maxArenaSlab; a
// request over a quarter of that gets its own slice.
const (
	minArenaSlab = 256
	maxArenaSlab = 4096
)

// Reset declares every slice handed out so far dead, and the values built
// from them: they are overwritten by the next ones.
func (a *Arena) Reset() {
	a.members = a.members[:0]
	a.items = a.items[:0]
}

// Object returns an object of copies of members, in their order.
func (a *Arena) Object(members ...Member) Value {
	m := a.Members(len(members))
	copy(m, members)
	return Value{Kind: Object, Members: m}
}

// Members returns n zero members to fill in.
func (a *Arena) Members(n int) []Member {
	if n > maxArenaSlab/4 {
		return make([]Member, n)
	}
	m := take(&a.members, n, minArenaSlab, maxArenaSlab)
	clear(m)
	return m
}

// Items returns n zero values to fill in.
func (a *Arena) Items(n int) []Value {
	if n > maxArenaSlab/4 {
		return make([]Value, n)
	}
	v := take(&a.items, n, minArenaSlab, maxArenaSlab)
	clear(v)
	return v
}
