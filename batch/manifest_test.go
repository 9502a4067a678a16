package batch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	d := Defaults{Roots: []string{"app=cli-root"}, Subject: []string{"./cli-subject"}}
	cases := []struct {
		name     string
		manifest string
		want     []Entry
		wantErr  int // entry of the ManifestError; -2: no error
	}{
		{
			name: "jsonl, paths relative to the manifest, defaults",
			manifest: `{"name":"a","request":"r.json","inputs":"in/i.jsonl","roots":["app=root"],"subject":["./s","x"]}

{"request":"/abs/other.json"}
`,
			want: []Entry{
				{Name: "a", Index: 0, Request: filepath.Join(dir, "r.json"), Inputs: filepath.Join(dir, "in/i.jsonl"),
					Roots: []string{"app=" + filepath.Join(dir, "root")}, Subject: []string{"./s", "x"}},
				{Name: "other", Index: 1, Request: "/abs/other.json", Roots: d.Roots, Subject: d.Subject},
			},
			wantErr: -2,
		},
		{
			name:     "json array",
			manifest: ` [{"name":"a","request":"r.json"},{"name":"b","request":"r.json","roots":[]}]`,
			want: []Entry{
				{Name: "a", Index: 0, Request: filepath.Join(dir, "r.json"), Roots: d.Roots, Subject: d.Subject},
				{Name: "b", Index: 1, Request: filepath.Join(dir, "r.json"), Roots: nil, Subject: d.Subject},
			},
			wantErr: -2,
		},
		{name: "name collision", manifest: `{"request":"r.json"}` + "\n" + `{"request":"sub/r.json"}`, wantErr: 1},
		{name: "bad name", manifest: `{"name":"../x","request":"r.json"}`, wantErr: 0},
		{name: "leading dot", manifest: `{"name":".x","request":"r.json"}`, wantErr: 0},
		{name: "no request", manifest: `{"name":"x"}`, wantErr: 0},
		{name: "unknown field", manifest: `{"name":"x","request":"r.json","subjekt":["a"]}`, wantErr: 0},
		{name: "bad root", manifest: `{"name":"x","request":"r.json","roots":["app"]}`, wantErr: 0},
		{name: "empty", manifest: "\n\n", wantErr: -1},
		{name: "two values on a line", manifest: `{"request":"r.json"} {"request":"s.json"}`, wantErr: 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("m%d.jsonl", i))
			writeFile(t, path, tc.manifest)
			got, err := Load(path, d)
			if tc.wantErr != -2 {
				me, ok := errors.AsType[*ManifestError](err)
				if !ok || me.Entry != tc.wantErr {
					t.Fatalf("err %v, want a ManifestError about entry %d", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if g.Name != w.Name || g.Index != w.Index || g.Request != w.Request || g.Inputs != w.Inputs ||
					!slices.Equal(g.Roots, w.Roots) || !slices.Equal(g.Subject, w.Subject) {
					t.Errorf("entry %d: got %+v, want %+v", i, g, w)
				}
			}
		})
	}
	t.Run("no subject anywhere", func(t *testing.T) {
		path := filepath.Join(dir, "nosubject.jsonl")
		writeFile(t, path, `{"request":"r.json"}`)
		if _, err := Load(path, Defaults{}); err == nil || !strings.Contains(err.Error(), "subject") {
			t.Errorf("err %v, want no subject", err)
		}
	})
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.json"), "{}")
	writeFile(t, filepath.Join(dir, "a.json"), "{}")
	writeFile(t, filepath.Join(dir, "a.inputs.jsonl"), "")
	writeFile(t, filepath.Join(dir, "notes.txt"), "")
	writeFile(t, filepath.Join(dir, "sub", "c.json"), "{}")
	got, err := Load(dir, Defaults{Subject: []string{"./s"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "a" || got[0].Inputs != filepath.Join(dir, "a.inputs.jsonl") ||
		got[1].Name != "b" || got[1].Inputs != "" || got[1].Index != 1 {
		t.Errorf("got %+v", got)
	}
}

// TestShards: for several N, every entry is in exactly one shard, the
// shards' sizes differ by at most one, and the choice is the documented
// one (position mod N).
func TestShards(t *testing.T) {
	const total = 37
	entries := make([]Entry, total)
	for i := range entries {
		entries[i] = Entry{Name: fmt.Sprintf("e%02d", i), Index: i}
	}
	for _, n := range []int{1, 2, 3, 4, 5, 7, 10, 36, 37, 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			seen := map[string]int{}
			lo, hi := total, 0
			for i := range n {
				s, err := ParseShard(fmt.Sprintf("%d/%d", i, n))
				if err != nil {
					t.Fatal(err)
				}
				got := Select(entries, s)
				lo, hi = min(lo, len(got)), max(hi, len(got))
				for _, e := range got {
					seen[e.Name]++
					if e.Index%n != i {
						t.Errorf("entry %d in shard %d/%d", e.Index, i, n)
					}
				}
			}
			for _, e := range entries {
				if seen[e.Name] != 1 {
					t.Errorf("entry %s in %d shards", e.Name, seen[e.Name])
				}
			}
			if hi-lo > 1 {
				t.Errorf("shard sizes from %d to %d", lo, hi)
			}
		})
	}
	for _, bad := range []string{"", "1", "2/2", "-1/2", "0/0", "a/b", "1/2/3", " 0/1"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

// TestValidName: the name rule, at its edges.
func TestValidName(t *testing.T) {
	long := strings.Repeat("a", 128)
	for name, want := range map[string]bool{
		"a": true, "A0": true, "run-1.ok_2": true, "0": true, long: true,
		"": false, long + "a": false, ".hidden": false, "-x": false, "_x": false,
		"a/b": false, "../x": false, "a b": false, "é": false, "a\x00": false,
	} {
		if got := validName(name); got != want {
			t.Errorf("validName(%q) = %v, want %v", name, got, want)
		}
	}
}
