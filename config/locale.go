package config

import "strings"

// ValidLocale reports whether tag is the literal, case-sensitive "C" or a
// well-formed RFC 5646 language tag: syntax only (normal, private-use and
// the fixed grandfathered forms), with the RFC's ban on duplicate variants
// and duplicate extension singletons. It never consults the IANA registry,
// the host's locale data or the environment.
func ValidLocale(tag string) bool {
	if tag == "C" {
		return true
	}
	if tag == "" || len(tag) > 256 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(isAlpha(c) || isDigit(c) || c == '-') {
			return false
		}
	}
	lower := strings.ToLower(tag)
	if grandfathered(lower) {
		return true
	}
	parts := strings.Split(lower, "-")
	for _, p := range parts {
		if p == "" || len(p) > 8 {
			return false
		}
	}
	if parts[0] == "x" {
		return privateUse(parts[1:])
	}
	return langtag(parts)
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allAlpha(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAlpha(s[i]) {
			return false
		}
	}
	return true
}

func allDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// grandfathered lists RFC 5646's irregular and regular grandfathered tags
// (lowercase; tags compare case-insensitively).
func grandfathered(lower string) bool {
	switch lower {
	case "en-gb-oed", "i-ami", "i-bnn", "i-default", "i-enochian", "i-hak",
		"i-klingon", "i-lux", "i-mingo", "i-navajo", "i-pwn", "i-tao", "i-tay",
		"i-tsu", "sgn-be-fr", "sgn-be-nl", "sgn-ch-de",
		"art-lojban", "cel-gaulish", "no-bok", "no-nyn", "zh-guoyu", "zh-hakka",
		"zh-min", "zh-min-nan", "zh-xiang":
		return true
	}
	return false
}

// privateUse checks the subtags after "x": 1*("-" 1*8alphanum).
func privateUse(rest []string) bool { return len(rest) > 0 }

// langtag parses language ["-" script] ["-" region] *("-" variant)
// *("-" extension) ["-" privateuse], greedily, as the grammar allows.
func langtag(p []string) bool {
	i := 0
	// language = 2*3ALPHA ["-" extlang] / 4ALPHA / 5*8ALPHA
	lang := p[i]
	if !allAlpha(lang) || len(lang) < 2 {
		return false
	}
	i++
	if len(lang) <= 3 {
		// extlang = 3ALPHA *2("-" 3ALPHA)
		for n := 0; n < 3 && i < len(p) && len(p[i]) == 3 && allAlpha(p[i]); n++ {
			i++
		}
	}
	// script = 4ALPHA
	if i < len(p) && len(p[i]) == 4 && allAlpha(p[i]) {
		i++
	}
	// region = 2ALPHA / 3DIGIT
	if i < len(p) && (len(p[i]) == 2 && allAlpha(p[i]) || len(p[i]) == 3 && allDigit(p[i])) {
		i++
	}
	// variant = 5*8alphanum / (DIGIT 3alphanum)
	variants := map[string]bool{}
	for i < len(p) && (len(p[i]) >= 5 || len(p[i]) == 4 && isDigit(p[i][0])) {
		if variants[p[i]] {
			return false
		}
		variants[p[i]] = true
		i++
	}
	// extension = singleton 1*("-" (2*8alphanum)); singleton is not "x"
	singletons := map[string]bool{}
	for i < len(p) && len(p[i]) == 1 && p[i] != "x" {
		if singletons[p[i]] {
			return false
		}
		singletons[p[i]] = true
		i++
		n := 0
		for i < len(p) && len(p[i]) >= 2 {
			i++
			n++
		}
		if n == 0 {
			return false
		}
	}
	if i < len(p) && p[i] == "x" {
		return privateUse(p[i+1:])
	}
	return i == len(p)
}
