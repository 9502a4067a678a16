package upstreamsubject_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestSubject drives subject.py under /usr/bin/python3, in isolated mode and
// with only the delivered environment, as a sandbox would start it.
func TestSubject(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := exec.LookPath(python); err != nil {
		t.Skipf("needs %s: %v", python, err)
	}
	var in bytes.Buffer
	for _, m := range []struct {
		kind    string
		payload any
	}{
		{"session.hello", map[string]any{"run_id": "r", "at_ms": 7, "config": map[string]any{
			"seed": "42", "clock": map[string]any{"mode": "manual", "initial_ms": 7}, "locale": "en-US", "timezone": "UTC",
			"terminal":   map[string]any{"columns": 12, "rows": 3, "capabilities": []string{}},
			"filesystem": map[string]any{"mode": "sandbox", "root_id": "app"}, "network": map[string]any{"mode": "deny"},
		}}},
		{"input.text", map[string]any{"text": "héllo"}},
		{"input.key", map[string]any{"keys": []string{"Enter"}}},
		{"input.clock", map[string]any{"at_ms": 257}},
		{"input.stop", map[string]any{}},
	} {
		line, _ := json.Marshal(map[string]any{"protocol": "termverify.control/v1", "kind": m.kind, "payload": m.payload})
		in.Write(append(line, '\n'))
	}
	cmd := exec.Command(python, "-I", "subject.py")
	cmd.Env = []string{"TERMVERIFY_SEED=42", "TZ=UTC0", "TERMVERIFY_NETWORK=deny"}
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("subject.py: %v", err)
	}

	var kinds []string
	var last map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var m struct {
			Kind    string         `json:"kind"`
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("bad line %q: %v", sc.Text(), err)
		}
		kinds = append(kinds, m.Kind)
		if m.Kind == "observation" {
			last = m.Payload
		}
	}
	want := []string{"session.ready", "observation", "observation", "observation", "observation", "run.finished"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	state := last["state"].(map[string]any)
	if state["text"] != "héllo" || state["now_ms"] != 257.0 || len(state["env"].(map[string]any)) != 3 {
		t.Errorf("final state %v", state)
	}
	lines := last["frame"].(map[string]any)["lines"].([]any)
	if len(lines) != 3 || lines[0] != "> héllo     " || strings.Count(lines[2].(string), " ") != 12 {
		t.Errorf("frame %q", lines)
	}
}
