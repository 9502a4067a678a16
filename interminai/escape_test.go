package interminai

import "testing"

func TestDecodeText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "hello", "hello"},
		{"empty", "", ""},
		{"newline", `a\nb`, "a\nb"},
		{"each simple escape", `\n\r\t\a\b\f\v\\`, "\n\r\t\a\b\f\v\\"},
		{"escape lower", `\e[A`, "\x1b[A"},
		{"escape upper", `\E:wq\r`, "\x1b:wq\r"},
		{"hex", `\x03`, "\x03"},
		{"hex upper digits", `\x1B\x7f`, "\x1b\x7f"},
		{"hex high byte", `\xc3\xa9`, "é"},
		{"hex one digit", `\x4`, `\x4`},
		{"hex one digit then text", `\x4g`, `\x4g`},
		{"hex not hex", `\xzz`, `\xzz`},
		{"hex at end", `\x`, `\x`},
		{"unknown escape", `\q`, `\q`},
		{"digit escape", `\0`, `\0`},
		{"unknown then known", `\q\n`, "\\q\n"},
		{"trailing backslash", `abc\`, `abc\`},
		{"double backslash then n", `\\n`, `\n`},
		{"triple backslash n", `\\\n`, "\\\n"},
		{"unicode passes through", `é\t中`, "é\t中"},
		{"ctrl-c by hex", `\x03`, "\x03"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecodeText(tc.in); got != tc.want {
				t.Fatalf("DecodeText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
