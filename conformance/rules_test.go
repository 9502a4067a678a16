package conformance

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/sharedtest"
)

// codecPackages are the packages whose Rule* constants are the codecs'
// rule ids, by import path below the module.
var codecPackages = []string{"internal/canon", "config", "input", "control", "transcript", "interminai"}

// notVerdicts are rule ids no input file can earn from a parser: they
// are refusals of a writer or a caller, or a supervisor's count. Each
// says why it is left out of the coverage requirement.
var notVerdicts = map[string]string{
	"internal":             "transcript.RuleInternal: a bug in the codec, never a verdict on an input",
	"writer.state":         "transcript.Writer refusals: a caller's misuse, not a file",
	"writer.value":         "transcript.Writer refusals: a caller's misuse, not a file",
	"writer.terminal-size": "transcript.Writer refusals: a caller's misuse, not a file",
	"limit.diagnostics":    "control.RuleDiagnostics: the supervisor counts diagnostics across messages; the adapter scenario diagnostics-101 covers it",
	"reply.invalid":        "interminai.DecodeReply: a client's verdict on a daemon's reply line, not a request",
	"frame.unterminated":   "a transport fault (the connection ended before the newline): the daemon owes no reply; the daemon case request-unterminated shows it is not answered",
}

// codecRules enumerates the Rule* string constants of the codec
// packages from their source, resolving constants defined as another
// package's (control.RuleDepth = canon.RuleDepth).
func codecRules(t *testing.T) (rules, owners map[string][]string) {
	t.Helper()
	root := sharedtest.RepoRoot(t)
	values := map[string]map[string]string{} // package name → const → value
	owners = map[string][]string{}           // rule id → packages spelling it out
	type ref struct{ pkg, name, from, fromName string }
	var refs []ref
	fset := token.NewFileSet()
	for _, dir := range codecPackages {
		paths, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			name := f.Name.Name
			if values[name] == nil {
				values[name] = map[string]string{}
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if !strings.HasPrefix(n.Name, "Rule") || i >= len(vs.Values) {
							continue
						}
						switch v := vs.Values[i].(type) {
						case *ast.BasicLit:
							if s, err := strconv.Unquote(v.Value); err == nil && v.Kind == token.STRING {
								values[name][n.Name] = s
								owners[s] = appendNew(owners[s], name)
							}
						case *ast.SelectorExpr:
							if x, ok := v.X.(*ast.Ident); ok {
								refs = append(refs, ref{name, n.Name, x.Name, v.Sel.Name})
							}
						}
					}
				}
			}
		}
	}
	for _, r := range refs {
		v, ok := values[r.from][r.fromName]
		if !ok {
			t.Fatalf("%s.%s = %s.%s: not found", r.pkg, r.name, r.from, r.fromName)
		}
		values[r.pkg][r.name] = v
	}
	out := map[string][]string{} // rule id → where defined
	for pkg, consts := range values {
		for name, v := range consts {
			out[v] = append(out[v], pkg+"."+name)
		}
	}
	for _, w := range out {
		sort.Strings(w)
	}
	if len(out) < 50 {
		t.Fatalf("found only %d rule ids: the enumeration is broken", len(out))
	}
	return out, owners
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// ownerFormats are the case formats in which a package's own rules are
// earned: a rule spelled out by a package needs an invalid case in one
// of that package's formats (json.syntax, spelled out by canon and by
// interminai, needs one of each). A package that re-uses another's
// constant adds nothing.
var ownerFormats = map[string][]string{
	"canon":      {FormatControl, FormatTranscript, FormatInputs},
	"config":     {FormatControl, FormatTranscript},
	"input":      {FormatInputs, FormatTranscript},
	"control":    {FormatControl},
	"transcript": {FormatTranscript},
	"interminai": {FormatDaemon},
}

// TestEveryRuleCovered fails when a codec rule id (enumerated from the
// code) has no invalid case in the corpus, when a format has no valid
// case, or when an exemption names a rule that no longer exists.
func TestEveryRuleCovered(t *testing.T) {
	c := loadCorpus(t)
	rules, owners := codecRules(t)
	covered := map[string]bool{}
	coveredIn := map[string]map[string]bool{} // rule → formats with an invalid case
	valid := map[string]int{}
	for _, cs := range c.Manifest.Cases {
		if cs.Expect.Verdict == Invalid {
			covered[cs.Expect.Rule] = true
			if coveredIn[cs.Expect.Rule] == nil {
				coveredIn[cs.Expect.Rule] = map[string]bool{}
			}
			coveredIn[cs.Expect.Rule][cs.Format] = true
		}
		if cs.Expect.Verdict == Valid {
			valid[cs.Format]++
		}
	}
	var missing []string
	for id, where := range rules {
		if _, exempt := notVerdicts[id]; exempt {
			continue
		}
		if !covered[id] {
			missing = append(missing, id+" ("+strings.Join(where, ", ")+")")
			continue
		}
		for _, pkg := range owners[id] {
			ok := false
			for _, f := range ownerFormats[pkg] {
				ok = ok || coveredIn[id][f]
			}
			if !ok {
				missing = append(missing, fmt.Sprintf("%s of package %s (in a %s case)", id, pkg, strings.Join(ownerFormats[pkg], " or ")))
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("rule %s has no invalid case in the corpus", m)
	}
	for id := range notVerdicts {
		if _, ok := rules[id]; !ok {
			t.Errorf("exempt rule %s is no longer defined by any codec: drop it from notVerdicts", id)
		}
		if covered[id] {
			t.Errorf("exempt rule %s has an invalid case after all: drop it from notVerdicts", id)
		}
	}
	for _, f := range []string{FormatControl, FormatTranscript, FormatInputs, FormatDaemon} {
		if valid[f] == 0 {
			t.Errorf("format %s has no valid case", f)
		}
	}
	t.Logf("%d rule ids, %d exempt, %d covered", len(rules), len(notVerdicts), len(covered))
}
