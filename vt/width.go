package vt

//go:generate sh -c "python3 testdata/genwidth.py > width_table.go && gofmt -w width_table.go"

// widthRange is one row of widthTable: runes lo..hi take w columns.
type widthRange struct {
	lo, hi rune
	w      int8
}

// RuneWidth is the columns r takes on the screen, as the emulator draws it
// (runeWidth): a client marking a cell of a screen the emulator printed
// counts cells with it.
func RuneWidth(r rune) int { return runeWidth(r) }

// runeWidth returns the columns r takes on the screen: 1 or 2; 0 for a
// mark that combines with the character before it; -1 for a rune that is
// not drawn at all (C0 and C1 controls, unassigned code points). The
// widths are glibc's wcwidth(3) in C.UTF-8, which is what tmux uses on the
// hosts we compare against; see testdata/genwidth.py.
func runeWidth(r rune) int {
	if r < 0x300 {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return -1
		}
		return 1
	}
	lo, hi := 0, len(widthTable)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch e := &widthTable[m]; {
		case r < e.lo:
			hi = m
		case r > e.hi:
			lo = m + 1
		default:
			return int(e.w)
		}
	}
	return 1
}
