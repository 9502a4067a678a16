package vt

import (
	"fmt"
	"strconv"
)

// Color is a cell's foreground or background colour: the terminal's
// default, one of the 256 indexed colours (0–7 normal, 8–15 bright,
// 16–255 the xterm cube and greys), or a 24-bit RGB colour. The zero
// Color is the default.
type Color uint32

const (
	colorIndexed = 1 << 24
	colorRGB     = 2 << 24
	colorKind    = 0xff << 24
)

// IndexedColor returns indexed colour n: SGR 30–37 are 0–7, 90–97 are
// 8–15, and 38;5;n is n.
func IndexedColor(n uint8) Color { return Color(colorIndexed | uint32(n)) }

// RGBColor returns the 24-bit colour set by SGR 38;2;r;g;b.
func RGBColor(r, g, b uint8) Color {
	return Color(colorRGB | uint32(r)<<16 | uint32(g)<<8 | uint32(b))
}

// IsDefault reports whether c is the terminal's default colour.
func (c Color) IsDefault() bool { return c == 0 }

// Index returns the palette index of an indexed colour; ok is false for
// the default and RGB colours.
func (c Color) Index() (n uint8, ok bool) {
	return uint8(c), c&colorKind == colorIndexed
}

// RGB returns the components of an RGB colour; ok is false for the
// default and indexed colours.
func (c Color) RGB() (r, g, b uint8, ok bool) {
	return uint8(c >> 16), uint8(c >> 8), uint8(c), c&colorKind == colorRGB
}

// String names the colour: "default", "idx(N)" or "#rrggbb".
func (c Color) String() string {
	if n, ok := c.Index(); ok {
		return "idx(" + strconv.Itoa(int(n)) + ")"
	}
	if r, g, b, ok := c.RGB(); ok {
		return fmt.Sprintf("#%02x%02x%02x", r, g, b)
	}
	return "default"
}

// Attr is a set of SGR character attributes.
type Attr uint16

// The attributes SGR sets. Double underline (21, 4:2) and the other
// underline styles are kept as Underline; rapid blink (6) as Blink.
const (
	Bold      Attr = 1 << iota // SGR 1
	Dim                        // SGR 2
	Italic                     // SGR 3
	Underline                  // SGR 4
	Blink                      // SGR 5
	Reverse                    // SGR 7
	Invisible                  // SGR 8
	Strike                     // SGR 9

	// attrWide and attrCont mark the two cells of a wide character; they
	// live in the same word so that a cell stays 16 bytes, and Style()
	// masks them out.
	attrWide Attr = 1 << 14
	attrCont Attr = 1 << 15

	publicAttrs = Bold | Dim | Italic | Underline | Blink | Reverse | Invisible | Strike
)

// Style is what SGR sets for a cell: colours and attributes.
type Style struct {
	Fg, Bg Color
	Attrs  Attr
}

// sgrOrder is the order attributes are written in by appendSGR, with
// their SGR numbers.
var sgrOrder = [...]struct {
	a Attr
	n string
}{{Bold, "1"}, {Dim, "2"}, {Italic, "3"}, {Underline, "4"}, {Blink, "5"}, {Reverse, "7"}, {Invisible, "8"}, {Strike, "9"}}

// appendSGR appends the SGR sequence that sets s from a reset state:
// "ESC[0;…m", or "ESC[0m" for the default style.
func appendSGR(b []byte, s Style) []byte {
	b = append(b, "\x1b[0"...)
	for _, o := range sgrOrder {
		if s.Attrs&o.a != 0 {
			b = append(b, ';')
			b = append(b, o.n...)
		}
	}
	b = appendColor(b, s.Fg, 30)
	b = appendColor(b, s.Bg, 40)
	return append(b, 'm')
}

// appendColor appends ";…" selecting c, base 30 for foreground, 40 for
// background; nothing for the default colour.
func appendColor(b []byte, c Color, base int) []byte {
	if n, ok := c.Index(); ok {
		switch {
		case n < 8:
			return strconv.AppendInt(append(b, ';'), int64(base)+int64(n), 10)
		case n < 16:
			return strconv.AppendInt(append(b, ';'), int64(base)+60+int64(n)-8, 10)
		}
		b = strconv.AppendInt(append(b, ';'), int64(base)+8, 10)
		b = append(b, ";5;"...)
		return strconv.AppendInt(b, int64(n), 10)
	}
	if r, g, bl, ok := c.RGB(); ok {
		b = strconv.AppendInt(append(b, ';'), int64(base)+8, 10)
		b = append(b, ";2;"...)
		b = strconv.AppendInt(b, int64(r), 10)
		b = strconv.AppendInt(append(b, ';'), int64(g), 10)
		return strconv.AppendInt(append(b, ';'), int64(bl), 10)
	}
	return b
}
