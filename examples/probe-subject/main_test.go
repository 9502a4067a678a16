package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// runSession runs the subject in-process in dir with the given handshake
// commands, sends one input.text per text, then input.stop, and returns
// the decoded messages and the exit status.
func runSession(t *testing.T, dir string, commands []string, texts ...string) ([]map[string]any, int) {
	t.Helper()
	var in bytes.Buffer
	write := func(kind string, payload any) {
		line, err := json.Marshal(map[string]any{"protocol": protocol, "kind": kind, "payload": payload})
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(line, '\n'))
	}
	write("session.hello", map[string]any{"run_id": "r", "at_ms": 0, "config": map[string]any{
		"seed": "1", "clock": map[string]any{"mode": "manual", "initial_ms": 0}, "locale": "C", "timezone": "UTC",
		"terminal":   map[string]any{"columns": 40, "rows": 10, "capabilities": []string{}},
		"filesystem": map[string]any{"mode": "sandbox", "root_id": "app"}, "network": map[string]any{"mode": "deny"},
	}})
	for _, text := range texts {
		write("input.text", map[string]any{"text": text})
	}
	write("input.stop", map[string]any{})

	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	code := Run(ctx, Options{
		Commands: commands, Environ: []string{"TERMVERIFY_NETWORK=deny", "HOME=/root"}, Dir: dir,
		Stdin: &in, Stdout: &out, Stderr: io.Discard,
	})
	var msgs []map[string]any
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("bad line %q: %v", sc.Text(), err)
		}
		msgs = append(msgs, m)
	}
	return msgs, code
}

// state returns the state of an observation or session.ready message.
func state(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	p := m["payload"].(map[string]any)
	if m["kind"] == "session.ready" {
		p = p["observation"].(map[string]any)
	}
	return p["state"].(map[string]any)
}

// asResult turns a decoded result back into the struct for comparison.
func asResult(t *testing.T, v any) result {
	t.Helper()
	b, _ := json.Marshal(v)
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if names, ok := r.Content.([]any); ok { // compare lists as []string
		s := make([]string, len(names))
		for i, n := range names {
			s[i] = n.(string)
		}
		r.Content = s
	}
	return r
}

func TestSession(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi\nthere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	msgs, code := runSession(t, dir, []string{"read hello.txt", "read missing"}, "write out.txt", "just text")
	kinds := []string{}
	for _, m := range msgs {
		kinds = append(kinds, m["kind"].(string))
	}
	want := []string{"session.ready", "observation", "observation", "observation", "run.finished"}
	if code != 0 || !reflect.DeepEqual(kinds, want) {
		t.Fatalf("exit %d, kinds %v; want 0, %v", code, kinds, want)
	}
	ready := state(t, msgs[0])
	startup := ready["startup"].([]any)
	if got := asResult(t, startup[0]); got != (result{Cmd: "read hello.txt", Content: "hi.there.", OK: true}) {
		t.Errorf("startup[0] = %+v", got)
	}
	if got := asResult(t, startup[1]); got != (result{Cmd: "read missing", Error: "ENOENT"}) {
		t.Errorf("startup[1] = %+v", got)
	}
	if got := asResult(t, ready["entries"]); !reflect.DeepEqual(got.Content, []string{"hello.txt"}) {
		t.Errorf("entries before write: %+v", got)
	}
	if env := ready["env"].(map[string]any); len(env) != 1 || env["TERMVERIFY_NETWORK"] != "deny" {
		t.Errorf("env %v", env)
	}
	if _, ok := ready["pid1"].(map[string]any)["ours"]; !ok {
		t.Errorf("pid1 %v", ready["pid1"])
	}
	wrote := state(t, msgs[1])
	if got := asResult(t, wrote["last"]); got != (result{Cmd: "write out.txt", OK: true}) {
		t.Errorf("write: %+v", got)
	}
	if got := asResult(t, wrote["entries"]); !reflect.DeepEqual(got.Content, []string{"hello.txt", "out.txt"}) {
		t.Errorf("entries after write: %+v", got)
	}
	if got := asResult(t, state(t, msgs[2])["last"]); got.Error != "not-a-command" {
		t.Errorf("plain text: %+v", got)
	}
}

func TestProbes(t *testing.T) {
	dir := t.TempDir()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			io.Copy(c, c)
			c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	udpClosed, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	udpAddr := udpClosed.LocalAddr().String()
	udpClosed.Close()

	tests := []struct {
		cmd  string
		want result
	}{
		{"net " + echo.Addr().String(), result{Content: "probe.", OK: true}},
		{"net " + closedAddr, result{Error: "ECONNREFUSED"}},
		{"net not-an-address", result{Error: "EINVAL"}},
		{"udp " + udpAddr, result{Error: "ECONNREFUSED"}},
		{"dns 127.0.0.1", result{Content: []string{"127.0.0.1"}, OK: true}},
		{"read " + dir, result{Content: "", Error: "EISDIR"}},
		{"write missing-dir/file", result{Error: "ENOENT"}},
		{"ls missing-dir", result{Error: "ENOENT"}},
		{"ls .", result{Content: []string{}, OK: true}},
		{"frobnicate", result{Error: "not-a-command"}},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			msgs, _ := runSession(t, dir, nil, tc.cmd)
			got := asResult(t, state(t, msgs[1])["last"])
			tc.want.Cmd = tc.cmd
			if tc.want.Error != "" {
				tc.want.Content = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if strings.Contains(got.Error, ":") {
				t.Errorf("error %q is a raw message", got.Error)
			}
		})
	}
}
