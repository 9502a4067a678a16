package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

// typedBase is a valid transcript whose last observation has n UI
// regions (ids r00, r01, …; focus r01 when there are any), n events
// (data 0, 1, …) and, when n > 0, a frame of four lines: the arrays
// the quick path checks as it scans them.
func typedBase(tb testing.TB, n int) []byte {
	tb.Helper()
	var out bytes.Buffer
	w := NewWriter(&out, testRunID)
	mustWriteOpenEpoch(tb, w)
	obs := Observation{State: canon.StringValue("s"), Events: []Event{}, UI: UI{Regions: []Region{}}}
	for k := range int64(n) {
		obs.Events = append(obs.Events, Event{Type: "out", Data: canon.IntValue(k)})
		obs.UI.Regions = append(obs.UI.Regions, Region{ID: fmt.Sprintf("r%02d", k), Role: "pane",
			Bounds: Bounds{Column: k, Row: 1, Columns: 2, Rows: 3}})
	}
	if n > 0 {
		focus := "r01"
		obs.UI.Focus = &focus
		obs.Frame = &Frame{Lines: []string{"ab", "ab", "ab", "ab"}, Columns: 2, Rows: 4}
	}
	if err := w.Observe(obs); err != nil {
		tb.Fatal(err)
	}
	if err := w.Finish(Exit{Kind: ExitCode}); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// typedMutations are edits of typedBase's last observation, each a list
// of replacements made once each, that break (or keep) the rules of its
// typed arrays, alone and several at once, in canonical form so that
// the quick path, not canon, takes the line.
var typedMutations = map[string][]string{
	// regions
	"duplicate id":           {`"id":"r02"`, `"id":"r00"`},
	"duplicate id past 8":    {`"id":"r15"`, `"id":"r09"`},
	"two duplicates":         {`"id":"r15"`, `"id":"r09"`, `"id":"r12"`, `"id":"r10"`},
	"duplicate escaped id":   {`"id":"r00"`, `"id":"r\u0001"`, `"id":"r11"`, `"id":"r\u0001"`},
	"escaped id as focus":    {`"id":"r10"`, `"id":"r\n\"x"`, `"focus":"r01"`, `"focus":"r\n\"x"`},
	"escaped id, few":        {`"id":"r01"`, `"id":"\\\t"`, `"focus":"r01"`, `"focus":"\\\t"`},
	"focus not a region":     {`"focus":"r01"`, `"focus":"zz"`},
	"focus null":             {`"focus":"r01"`, `"focus":null`},
	"focus number":           {`"focus":"r01"`, `"focus":1`},
	"focus of a duplicate":   {`"id":"r02"`, `"id":"r00"`, `"focus":"r01"`, `"focus":"r00"`},
	"negative column":        {`"column":1,"columns":2`, `"column":-1,"columns":2`},
	"zero rows":              {`"rows":3},"id":"r02"`, `"rows":0},"id":"r02"`},
	"fractional rows":        {`"rows":3},"id":"r02"`, `"rows":1.5},"id":"r02"`},
	"huge row":               {`"row":1,"rows":3},"id":"r02"`, `"row":9007199254740991,"rows":3},"id":"r02"`},
	"missing role":           {`"id":"r02","role":"pane"}`, `"id":"r02"}`},
	"empty role":             {`"id":"r02","role":"pane"`, `"id":"r02","role":""`},
	"empty id":               {`"id":"r02"`, `"id":""`},
	"id not a string":        {`"id":"r02"`, `"id":2`},
	"unknown region member":  {`"id":"r02","role":"pane"`, `"id":"r02","role":"pane","zz":1`},
	"x- region member":       {`"id":"r02","role":"pane"`, `"id":"r02","role":"pane","x-a":[1,{"b":"\u0001"}]`},
	"unknown bounds member":  {`"rows":3},"id":"r02"`, `"rows":3,"x":1},"id":"r02"`},
	"missing bounds member":  {`"row":1,"rows":3},"id":"r02"`, `"row":1},"id":"r02"`},
	"bounds not an object":   {`{"column":2,"columns":2,"row":1,"rows":3}`, `[2,2,1,3]`},
	"region not an object":   {`{"bounds":{"column":2,"columns":2,"row":1,"rows":3},"id":"r02","role":"pane"}`, `[1]`},
	"region null":            {`{"bounds":{"column":2,"columns":2,"row":1,"rows":3},"id":"r02","role":"pane"}`, `null`},
	"regions not an array":   {`"regions":[]`, `"regions":{}`},
	"regions a string":       {`"regions":[]`, `"regions":"x"`},
	"regions of non-objects": {`"regions":[]`, `"regions":[1,"a",[]]`},
	"regions noncanonical":   {`"id":"r02","role":"pane"`, `"role":"pane","id":"r02"`},
	"regions empty region":   {`"regions":[]`, `"regions":[{}]`},
	"bad region, bad cursor": {`"id":"r02"`, `"id":""`, `"visible":false`, `"visible":1`},
	"bad cursor":             {`"visible":false`, `"visible":1`},
	// events
	"event type empty":           {`{"data":3,"type":"out"}`, `{"data":3,"type":""}`},
	"event type a number":        {`{"data":3,"type":"out"}`, `{"data":3,"type":3}`},
	"event without data":         {`{"data":3,"type":"out"}`, `{"type":"out"}`},
	"event without type":         {`{"data":3,"type":"out"}`, `{"data":3}`},
	"event with a member":        {`{"data":3,"type":"out"}`, `{"data":3,"type":"out","z":1}`},
	"event with an x- member":    {`{"data":3,"type":"out"}`, `{"data":3,"type":"out","x-z":{"a":[]}}`},
	"event not an object":        {`{"data":3,"type":"out"}`, `3`},
	"event's data deep":          {`{"data":3,"type":"out"}`, `{"data":{"a":[[[{"b":"\u001f"}]]],"c":1.5},"type":"\"t"}`},
	"events not an array":        {`"events":[]`, `"events":{}`},
	"events of non-objects":      {`"events":[]`, `"events":[[],{"data":1,"type":"t"},null]`},
	"two bad events":             {`{"data":3,"type":"out"}`, `{"data":3}`, `{"data":1,"type":"out"}`, `{"data":1,"type":""}`},
	"bad event, bad region":      {`{"data":9,"type":"out"}`, `{"data":9}`, `"id":"r02"`, `"id":"r00"`},
	"bad region, bad frame line": {`"id":"r02"`, `"id":"r00"`, `"lines":["ab",`, `"lines":[1,`},
	// frame
	"frame line a number":       {`"lines":["ab",`, `"lines":[1,`},
	"frame line null, late":     {`"ab"],"rows"`, `null],"rows"`},
	"frame lines too few":       {`"lines":["ab",`, `"lines":[`},
	"frame lines too many":      {`"lines":["ab",`, `"lines":["ab","cd","\u0000",`},
	"frame too few, non-string": {`"lines":["ab","ab",`, `"lines":[{},`},
	"frame lines not an array":  {`"lines":["ab","ab","ab","ab"]`, `"lines":"abababab"`},
	"frame rows zero":           {`"rows":4}`, `"rows":0}`},
	"frame lines escaped":       {`"lines":["ab",`, `"lines":["\n\"\\",`},
	"frame member":              {`"frame":{"columns":2,`, `"frame":{"a":1,"columns":2,`},
	"frame not canonical":       {`"lines":["ab",`, `"lines":[ "ab",`},
	"frame lines nested deep":   {`"lines":["ab",`, `"lines":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]],`},
}

// typedCases returns typedBase transcripts of 0, 3 and 20 regions and
// events, and every mutation of typedMutations that applies to each.
func typedCases(tb testing.TB) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	applied := map[string]bool{}
	for _, n := range []int{0, 3, 20} {
		data := typedBase(tb, n)
		out[fmt.Sprintf("%d/valid", n)] = data
		lines := bytes.SplitAfter(data, []byte("\n"))
		obs := len(lines) - 3 // the last observation; then run.finished and the empty tail
		for name, edits := range typedMutations {
			l := lines[obs]
			ok := true
			for k := 0; k < len(edits); k += 2 {
				if !bytes.Contains(l, []byte(edits[k])) {
					ok = false
					break
				}
				l = bytes.Replace(l, []byte(edits[k]), []byte(edits[k+1]), 1)
			}
			if !ok {
				continue
			}
			applied[name] = true
			mutated := append(bytes.Join(lines[:obs], nil), l...)
			out[fmt.Sprintf("%d/%s", n, name)] = append(mutated, bytes.Join(lines[obs+1:], nil)...)
		}
	}
	for name := range typedMutations {
		if !applied[name] {
			tb.Fatalf("mutation %q applies to no base", name)
		}
	}
	return out
}

// TestStreamTypedArrays: on observations whose events, regions and
// frame lines break their rules in every way, one at a time and several
// at once (typedMutations), the streaming checker, which checks those
// arrays as it scans them, reaches Parse's verdict, message included,
// with lines short and long, in one block and straddling blocks.
func TestStreamTypedArrays(t *testing.T) {
	rules := map[string]int{}
	for name, data := range typedCases(t) {
		t.Run(name, func(t *testing.T) {
			tr, err := Parse(data)
			if e, ok := errors.AsType[*Error](err); ok {
				rules[e.Rule]++
			}
			sameAsStream(t, data, tr, err)
			// The same transcript with the observation padded past the
			// 16 KiB after which the decoder's memory is dropped.
			padded := bytes.Replace(data, []byte(`"state":"s"`), []byte(`"state":"`+strings.Repeat("s", 20<<10)+`"`), 1)
			tr, err = Parse(padded)
			sameAsStream(t, padded, tr, err)
		})
	}
	for _, rule := range []string{RuleRegion, RuleFocus, RuleEvent, RuleFrame, RuleUI, RuleObservation, RuleCursor, RuleCanonical} {
		if rules[rule] == 0 {
			t.Errorf("no mutation was rejected for %s (got %v)", rule, rules)
		}
	}
}

// typedSeeds are typedCases' transcripts, for the fuzz targets.
func typedSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, data := range typedCases(tb) {
		out = append(out, data)
	}
	return out
}
