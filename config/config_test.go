package config

import (
	"errors"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

func TestValidLocale(t *testing.T) {
	valid := []string{"C", "abcd", "abcdefgh-123-1abc-abcdefgh-a-aa-abcdefgh-x-a-abcdefgh", "art-lojban",
		"cel-gaulish", "de", "de-CH-1901", "en-GB-oed", "en-US", "en-US-u-islamcal", "i-KLINGON", "i-default",
		"no-bok", "sgn-BE-FR", "sl-rozaj-biske", "x-whatever", "zh-cmn-Hans-CN", "zh-min-nan", "EN-us"}
	invalid := []string{"", "a-DE", "abc-def-ghi-jkl-mno", "abcdefghi", "c", "de-419-DE", "en--US",
		"en-0-aaa-0-bbb", "en-a", "en-a-aaa-A-bbb", "en-abcdefghi", "en-x", "en_US", "i-not-registered",
		"not a tag!", "sl-rozaj-ROZAJ", "x", "x-abcdefghi", "én-US", "en-", "-en"}
	for _, tag := range valid {
		if !ValidLocale(tag) {
			t.Errorf("ValidLocale(%q) = false, want true", tag)
		}
	}
	for _, tag := range invalid {
		if ValidLocale(tag) {
			t.Errorf("ValidLocale(%q) = true, want false", tag)
		}
	}
}

func TestValidSeed(t *testing.T) {
	for s, want := range map[string]bool{"0": true, "42": true, "18446744073709551615": true,
		"18446744073709551616": false, "": false, "01": false, "-1": false, "1.0": false, " 1": false} {
		if got := ValidSeed(s); got != want {
			t.Errorf("ValidSeed(%q) = %v, want %v", s, got, want)
		}
	}
}

const good = `{"clock":{"initial_ms":0,"mode":"manual"},"filesystem":{"mode":"sandbox","root_id":"r"},"locale":"en-US","network":{"allowed":[{"host":"a","port":1},{"host":"a","port":2},{"host":"b","port":1}],"mode":"allow-list"},"seed":"42","terminal":{"capabilities":["ansi","color"],"columns":80,"rows":24},"timezone":"UTC","x-note":1}`

func TestDecode(t *testing.T) {
	cases := []struct {
		name, json, rule string
	}{
		{"good", good, ""},
		{"not object", `[]`, ""},
		{"missing seed", `{"clock":{"initial_ms":0,"mode":"manual"},"filesystem":{"mode":"sandbox","root_id":"r"},"locale":"C","network":{"mode":"deny"},"terminal":{"capabilities":[],"columns":80,"rows":24},"timezone":"UTC"}`, RuleMembers},
		{"unknown member", replace(good, `"x-note":1`, `"hostname":"h"`), RuleMembers},
		{"seed number", replace(good, `"seed":"42"`, `"seed":42`), RuleSeed},
		{"seed leading zero", replace(good, `"seed":"42"`, `"seed":"042"`), RuleSeed},
		{"clock float", replace(good, `"initial_ms":0`, `"initial_ms":0.0`), RuleClock},
		{"clock negative", replace(good, `"initial_ms":0`, `"initial_ms":-1`), RuleClock},
		{"clock mode", replace(good, `"mode":"manual"`, `"mode":"wall"`), RuleClock},
		{"clock extension ok", replace(good, `"mode":"manual"`, `"mode":"manual","x-a":true`), ""},
		{"locale", replace(good, `"en-US"`, `"en_US"`), RuleLocale},
		{"timezone empty", replace(good, `"timezone":"UTC"`, `"timezone":""`), RuleTimezone},
		{"timezone named ok", replace(good, `"timezone":"UTC"`, `"timezone":"Europe/Berlin"`), ""},
		{"terminal zero", replace(good, `"columns":80`, `"columns":0`), RuleTerminal},
		{"terminal unsorted", replace(good, `["ansi","color"]`, `["color","ansi"]`), RuleTerminal},
		{"terminal dup", replace(good, `["ansi","color"]`, `["ansi","ansi"]`), RuleTerminal},
		{"terminal empty cap", replace(good, `["ansi","color"]`, `[""]`), RuleTerminal},
		{"terminal no caps", replace(good, `"capabilities":["ansi","color"],`, ``), RuleTerminal},
		{"filesystem mode", replace(good, `"mode":"sandbox"`, `"mode":"host"`), RuleFilesystem},
		{"filesystem empty id", replace(good, `"root_id":"r"`, `"root_id":""`), RuleFilesystem},
		{"network unsorted", replace(good, `{"host":"a","port":2},{"host":"b","port":1}`, `{"host":"b","port":1},{"host":"a","port":2}`), RuleNetwork},
		{"network dup", replace(good, `{"host":"a","port":2}`, `{"host":"a","port":1}`), RuleNetwork},
		{"network port 0", replace(good, `"port":1},{"host":"a"`, `"port":0},{"host":"a"`), RuleNetwork},
		{"network port 65536", replace(good, `{"host":"b","port":1}`, `{"host":"b","port":65536}`), RuleNetwork},
		{"network deny with allowed", replace(good, `"mode":"allow-list"`, `"mode":"deny"`), RuleNetwork},
		{"network mode", replace(good, `"mode":"allow-list"`, `"mode":"open"`), RuleNetwork},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := canon.Decode([]byte(tc.json))
			if err != nil {
				if tc.name == "not object" {
					return
				}
				t.Fatalf("decode: %v", err)
			}
			_, err = Decode(&v)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("Decode: %v, want nil", err)
				}
				return
			}
			ce, ok := errors.AsType[*Error](err)
			if !ok || ce.Rule != tc.rule {
				t.Fatalf("Decode: %v, want rule %s", err, tc.rule)
			}
		})
	}
}

func TestValueRoundTrip(t *testing.T) {
	v, _, err := canon.Decode([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(&v)
	if err != nil {
		t.Fatal(err)
	}
	cv := c.Value()
	out, err := canon.Marshal(&cv)
	if err != nil {
		t.Fatal(err)
	}
	want := replace(good, `,"x-note":1`, ``)
	if string(out) != want {
		t.Fatalf("Value() = %s\nwant      %s", out, want)
	}
}

func replace(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	panic("replace: " + old + " not found")
}
