// Package canon is the strict JSON machinery both termverify codecs share: a
// decoder that sees every member and number literal (duplicate members, bad
// UTF-8, lone surrogates, non-finite numbers and the fixed v1 budgets are
// errors, never repaired), a checker for RFC 8785 canonical form, and a
// canonical writer proven byte-identical to github.com/gowebpki/jcs. Its
// lexer (lex.go) is the one reader of JSON whitespace, escapes and
// numbers in the module: the transcript package's fast decoders are
// built on it rather than on lexers of their own.
package canon
