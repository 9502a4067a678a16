package transcript

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/termverify/termverify-sandbox/internal/canon"
)

func applied(c, extra string) []rec {
	rs := negotiated()
	for i := range rs {
		if i > 0 && strings.Contains(rs[i].payload, `"constraint":"`+c+`"`) {
			rs[i] = appliedRec(c, extra)
		}
	}
	return append(rs, failed())
}

func withPayload(c, payload string) []rec {
	rs := negotiated()
	for i := range rs {
		if i > 0 && strings.Contains(rs[i].payload, `"constraint":"`+c+`"`) {
			rs[i] = rec{KindCapability, payload}
		}
	}
	return append(rs, failed())
}

func started(config, subject string) []rec {
	return []rec{{KindRunStarted, `{"config":` + config + `,"subject":` + subject + `}`}, failed()}
}

func inputRec(kind, payload string) []rec {
	return body(rec{kind, payload}, obsAt(100, ""), finished(0))
}

// TestSemanticRules has an accepted and a rejected case for every
// semantic rule, asserting the Rule id.
func TestSemanticRules(t *testing.T) {
	uns := func(c string) rec {
		return rec{KindCapability, `{"constraint":"` + c + `","status":"unsupported","reason":"no"}`}
	}
	endUns := func(c string) rec {
		return rec{KindRunUnsupported, `{"constraint":"` + c + `","code":"constraint-unsupported","message":"no"}`}
	}
	exitObs := func(ms int64, exit string) rec { return obsAt(ms, `,"process":{"state":"exited","exit":`+exit+`}`) }
	cases := []struct {
		name string
		rs   []rec
		want string
	}{
		// Valid shapes.
		{"finished", body(textAt(100), obsAt(100, ""), finished(0)), ""},
		{"failed before capabilities", []rec{startedRec(), failed()}, ""},
		{"failed after applied prefix", append(negotiated()[:4], failed()), ""},
		{"unsupported first", []rec{startedRec(), uns("seed"), endUns("seed")}, ""},
		{"unsupported after prefix", append(negotiated()[:5], uns("terminal"), endUns("terminal")), ""},
		{"no readiness", append(negotiated(), finished(0)), ""},
		{"readiness, no epochs", body(finished(0)), ""},
		{"startup diagnostics", append(negotiated(), diagAt(100), diagAt(100), obsAt(100, ""), failed()), ""},
		{"epoch open at the end", body(textAt(100), diagAt(100), failed()), ""},
		{"clock advance", body(rec{KindInputClock, `{"at_ms":350,"delta_ms":250}`}, obsAt(350, ""), textAt(350), obsAt(350, ""), finished(0)), ""},
		{"stop then exit", body(rec{KindInputStop, `{"at_ms":100}`}, exitObs(100, `{"kind":"code","value":3}`), finished(3)), ""},
		{"exit observation then failed", body(textAt(100), exitObs(100, `{"kind":"signal","value":"KILL"}`), failed()), ""},
		{"x- members everywhere", body(rec{KindInputText, `{"at_ms":100,"text":"a","x-why":1}`}, obsAt(100, `,"x-n":1.5`), finished(0)), ""},

		// Kinds and member sets.
		{"unknown kind", body(rec{"input.unknown", `{"at_ms":100}`}, finished(0)), RuleKind},
		{"unknown payload member", inputRec(KindInputText, `{"at_ms":100,"text":"a","extra":1}`), RulePayloadMembers},
		{"payload not object", body(rec{KindInputStop, `[]`}, finished(0)), RulePayloadMembers},

		// Placement.
		{"started twice", append(negotiated(), startedRec(), failed()), RuleStartedOnce},
		{"started not first", []rec{failed(), startedRec()}, RuleStartedFirst},
		{"no terminal", negotiated(), RuleTerminalLast},
		{"two terminals", append(negotiated(), failed(), failed()), RuleTerminalLast},

		// run.started.
		{"config missing", []rec{{KindRunStarted, `{"subject":` + subjectJSON + `}`}, failed()}, RuleStartedMembers},
		{"subject missing", []rec{{KindRunStarted, `{"config":` + configJSON + `}`}, failed()}, RuleSubject},
		{"bad locale", started(strings.Replace(configJSON, `"en-US"`, `"en_US"`, 1), subjectJSON), "config.locale"},
		{"bad seed", started(strings.Replace(configJSON, `"7"`, `"07"`, 1), subjectJSON), "config.seed"},
		{"subject format", started(configJSON, strings.Replace(subjectJSON, "replay-subject/v1", "replay-subject/v2", 1)), RuleSubject},
		{"subject selector grammar", started(configJSON, strings.Replace(subjectJSON, `"app"`, `"App"`, 1)), RuleSubject},
		{"subject platform", started(configJSON, strings.Replace(subjectJSON, `"format"`, `"platform":{"os":"linux"},"format"`, 1)), RuleSubject},
		{"subject platform ok", started(configJSON, strings.Replace(subjectJSON, `"format"`, `"platform":{"os":"linux","architecture":"amd64"},"format"`, 1)), ""},

		// Terminal payloads.
		{"finished exit", body(rec{KindRunFinished, `{"exit":{"kind":"code","value":"0"}}`}), RuleFinishedExit},
		{"finished signal empty", body(rec{KindRunFinished, `{"exit":{"kind":"signal","value":""}}`}), RuleFinishedExit},
		{"failed code empty", body(rec{KindRunFailed, `{"error":{"code":"","message":"x"}}`}), RuleFailedError},
		{"failed details any", body(rec{KindRunFailed, `{"error":{"code":"c","message":"x","details":[1,"a"]}}`}), ""},
		{"unsupported code empty", []rec{startedRec(), uns("seed"), {KindRunUnsupported, `{"constraint":"seed","code":"","message":"no"}`}}, RuleUnsupportedEnd},
		{"unsupported wrong constraint", []rec{startedRec(), uns("seed"), endUns("clock")}, RuleUnsupportedEnd},

		// Negotiation.
		{"status", withPayload("seed", `{"constraint":"seed","status":"partial","effective":"7","tier":"os"}`), RuleCapStatus},
		{"applied with reason", applied("seed", `,"reason":"x"`), RuleCapMembers},
		{"applied without tier", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7"}`), RuleCapMembers},
		{"unsupported reason not string", []rec{startedRec(), {KindCapability, `{"constraint":"seed","status":"unsupported","reason":1}`}, endUns("seed")}, RuleCapMembers},
		{"out of order", append([]rec{startedRec(), appliedRec("clock", "")}, failed()), RuleCapOrder},
		{"eighth result", append(negotiated(), appliedRec("seed", ""), failed()), RuleCapOrder},
		{"result after body", append(body(), appliedRec("seed", ""), failed()), RuleCapOrder},
		{"effective differs", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"8","tier":"os"}`), RuleCapEffective},
		{"effective type strict", withPayload("clock", `{"constraint":"clock","status":"applied","effective":{"mode":"manual","initial_ms":100.5},"tier":"os"}`), RuleCapEffective},
		{"named timezone", started(strings.Replace(configJSON, `"UTC"`, `"Europe/Berlin"`, 1), subjectJSON)[:1], ""}, // placeholder replaced below
		{"tier vocabulary", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"OS"}`), RuleCapTier},
		{"delivered needs delivery", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered"}`), RuleCapDelivery},
		{"os forbids delivery", applied("seed", `,"delivery":{"channel":"hello-config"}`), RuleCapDelivery},
		{"hello-config", withPayload("terminal", `{"constraint":"terminal","status":"applied","effective":`+effective["terminal"]+`,"tier":"delivered","delivery":{"channel":"hello-config"}}`), ""},
		{"hello-config with env", withPayload("terminal", `{"constraint":"terminal","status":"applied","effective":`+effective["terminal"]+`,"tier":"delivered","delivery":{"channel":"hello-config","env":{"A":"b"}}}`), RuleCapDelivery},
		{"unknown channel", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered","delivery":{"channel":"pigeon"}}`), RuleCapDelivery},
		{"spawn-env", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered","delivery":{"channel":"spawn-env","env":{"TERMVERIFY_SEED":"7"}}}`), ""},
		{"spawn-env empty env", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered","delivery":{"channel":"spawn-env","env":{}}}`), RuleCapDelivery},
		{"spawn-env = in name", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered","delivery":{"channel":"spawn-env","env":{"A=B":"7"}}}`), RuleCapDelivery},
		{"spawn-env NUL in value", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered","delivery":{"channel":"spawn-env","env":{"A":"\u0000"}}}`), RuleCapDelivery},
		{"spawn-env cwd not filesystem", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered","delivery":{"channel":"spawn-env","env":{"A":"7"},"cwd":"/r"}}`), RuleCapDelivery},
		{"spawn-env filesystem needs cwd", withPayload("filesystem", `{"constraint":"filesystem","status":"applied","effective":`+effective["filesystem"]+`,"tier":"delivered","delivery":{"channel":"spawn-env","env":{"A":"7"}}}`), RuleCapDelivery},
		{"legacy delivery", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered","delivery":{"env":{"TERMVERIFY_SEED":"7"}}}`), ""},
		{"legacy env with other channel", withPayload("seed", `{"constraint":"seed","status":"applied","effective":"7","tier":"delivered","delivery":{"channel":"wire-message","env":{"A":"7"}}}`), RuleCapDelivery},
		{"body before seven", append(negotiated()[:3], obsAt(100, ""), failed()), RuleNegIncomplete},
		{"finished before seven", append(negotiated()[:3], finished(0)), RuleNegIncomplete},
		{"unsupported then body", []rec{startedRec(), uns("seed"), obsAt(100, ""), endUns("seed")}, RuleNegUnsupported},
		{"unsupported then failed", []rec{startedRec(), uns("seed"), failed()}, RuleNegUnsupported},
		{"run.unsupported after seven", append(negotiated(), endUns("network")), RuleNegUnsupported},

		// Epochs and clock.
		{"input before readiness", append(negotiated(), textAt(100), obsAt(100, ""), failed()), RuleEpochReadiness},
		{"overlapping inputs", body(textAt(100), textAt(100), failed()), RuleEpochOpen},
		{"idle observation", body(obsAt(100, ""), failed()), RuleIdleObservation},
		{"idle diagnostic", body(diagAt(100), failed()), RuleIdleDiagnostic},
		{"input after stop", body(rec{KindInputStop, `{"at_ms":100}`}, obsAt(100, ""), textAt(100), failed()), RuleAfterStop},
		{"body after exit", body(textAt(100), exitObs(100, `{"kind":"code","value":0}`), textAt(100), failed()), RuleAfterExit},
		{"input at_ms", body(textAt(101), obsAt(100, ""), failed()), RuleClock},
		{"clock at_ms", body(rec{KindInputClock, `{"at_ms":300,"delta_ms":250}`}, failed()), RuleClock},
		{"clock zero delta", body(rec{KindInputClock, `{"at_ms":100,"delta_ms":0}`}, failed()), RuleClockAdvanced},
		{"diagnostic at_ms", body(textAt(100), diagAt(0), failed()), RuleEvidenceTime},
		{"readiness at_ms", append(negotiated(), obsAt(0, ""), failed()), RuleEvidenceTime},
		{"exit mismatch", body(textAt(100), exitObs(100, `{"kind":"code","value":1}`), finished(0)), RuleExitMismatch},

		// Inputs.
		{"at_ms missing", inputRec(KindInputText, `{"text":"a"}`), RuleInputAtMS},
		{"at_ms negative", inputRec(KindInputText, `{"at_ms":-1,"text":"a"}`), RuleInputAtMS},
		{"at_ms bool", inputRec(KindInputText, `{"at_ms":true,"text":"a"}`), RuleInputAtMS},
		{"text not string", inputRec(KindInputText, `{"at_ms":100,"text":1}`), RuleInputText},
		{"clipboard", inputRec(KindInputClipboard, `{"at_ms":100,"text":"a"}`), ""},
		{"clipboard missing text", inputRec(KindInputClipboard, `{"at_ms":100}`), RuleClipboard},
		{"key Enter", inputRec(KindInputKey, `{"at_ms":100,"keys":["Enter"]}`), ""},
		{"key Control c", inputRec(KindInputKey, `{"at_ms":100,"keys":["Control","c"]}`), ""},
		{"key all modifiers", inputRec(KindInputKey, `{"at_ms":100,"keys":["Control","Alt","Shift","Meta","~"]}`), ""},
		{"key Shift Tab", inputRec(KindInputKey, `{"at_ms":100,"keys":["Shift","Tab"]}`), ""},
		{"key bare letter", inputRec(KindInputKey, `{"at_ms":100,"keys":["c"]}`), RuleKeyChord},
		{"key Shift letter", inputRec(KindInputKey, `{"at_ms":100,"keys":["Shift","a"]}`), RuleKeyChord},
		{"key order", inputRec(KindInputKey, `{"at_ms":100,"keys":["Alt","Control","c"]}`), RuleKeyChord},
		{"key repeated", inputRec(KindInputKey, `{"at_ms":100,"keys":["Control","Control","c"]}`), RuleKeyChord},
		{"key two bases", inputRec(KindInputKey, `{"at_ms":100,"keys":["Enter","Tab"]}`), RuleKeyChord},
		{"key case", inputRec(KindInputKey, `{"at_ms":100,"keys":["enter"]}`), RuleKeyChord},
		{"key empty", inputRec(KindInputKey, `{"at_ms":100,"keys":[]}`), RuleKeyChord},
		{"resize", inputRec(KindInputResize, `{"at_ms":100,"columns":100,"rows":30}`), ""},
		{"resize zero", inputRec(KindInputResize, `{"at_ms":100,"columns":0,"rows":30}`), RuleResize},
		{"mouse press", inputRec(KindInputMouse, `{"at_ms":100,"action":"press","column":1,"row":2,"button":"left"}`), ""},
		{"mouse scroll", inputRec(KindInputMouse, `{"at_ms":100,"action":"scroll","column":1,"row":2,"delta":-3}`), ""},
		{"mouse move", inputRec(KindInputMouse, `{"at_ms":100,"action":"move","column":1,"row":2}`), ""},
		{"mouse drag", inputRec(KindInputMouse, `{"at_ms":100,"action":"drag","column":1,"row":2}`), RuleMousePosition},
		{"mouse negative row", inputRec(KindInputMouse, `{"at_ms":100,"action":"move","column":1,"row":-2}`), RuleMousePosition},
		{"mouse press no button", inputRec(KindInputMouse, `{"at_ms":100,"action":"press","column":1,"row":2}`), RuleMouseButton},
		{"mouse press delta", inputRec(KindInputMouse, `{"at_ms":100,"action":"press","column":1,"row":2,"button":"left","delta":1}`), RuleMouseButton},
		{"mouse scroll zero", inputRec(KindInputMouse, `{"at_ms":100,"action":"scroll","column":1,"row":2,"delta":0}`), RuleMouseDelta},
		{"mouse scroll button", inputRec(KindInputMouse, `{"at_ms":100,"action":"scroll","column":1,"row":2,"delta":1,"button":"left"}`), RuleMouseDelta},
		{"mouse move button null", inputRec(KindInputMouse, `{"at_ms":100,"action":"move","column":1,"row":2,"button":null}`), RuleMouseDelta},
		{"stop member", inputRec(KindInputStop, `{"at_ms":100,"why":1}`), RulePayloadMembers},

		// Diagnostics.
		{"diagnostic details", body(textAt(100), rec{KindDiagnostic, `{"at_ms":100,"code":"c","message":"m","details":{"a":1}}`}, failed()), ""},
		{"diagnostic no code", body(textAt(100), rec{KindDiagnostic, `{"at_ms":100,"message":"m"}`}, failed()), RuleDiagnostic},
		{"diagnostic message type", body(textAt(100), rec{KindDiagnostic, `{"at_ms":100,"code":"c","message":1}`}, failed()), RuleDiagnostic},

		// Observations.
		{"observation missing state", body(textAt(100), rec{KindObservation, `{"at_ms":100,"events":[],"ui":{"regions":[],"focus":null,"cursor":{"column":0,"row":0,"visible":false},"mode":null}}`}, failed()), RuleObservation},
		{"observation ui missing mode", body(textAt(100), rec{KindObservation, `{"at_ms":100,"state":1,"events":[],"ui":{"regions":[],"focus":null,"cursor":{"column":0,"row":0,"visible":false}}}`}, failed()), RuleUI},
		{"observation region", body(textAt(100), rec{KindObservation, `{"at_ms":100,"state":1,"events":[],"ui":{"regions":[{"id":"main","role":"main","bounds":{"column":0,"row":0,"columns":80,"rows":24}}],"focus":"main","cursor":{"column":0,"row":0,"visible":true},"mode":"insert"}}`}, finished(0)), ""},
		{"observation region bounds", body(textAt(100), rec{KindObservation, `{"at_ms":100,"state":1,"events":[],"ui":{"regions":[{"id":"main","role":"main","bounds":{"column":0,"row":0,"columns":0,"rows":24}}],"focus":null,"cursor":{"column":0,"row":0,"visible":true},"mode":null}}`}, failed()), RuleRegion},
		{"observation region ids", body(textAt(100), rec{KindObservation, `{"at_ms":100,"state":1,"events":[],"ui":{"regions":[{"id":"a","role":"r","bounds":{"column":0,"row":0,"columns":1,"rows":1}},{"id":"a","role":"r","bounds":{"column":0,"row":0,"columns":1,"rows":1}}],"focus":null,"cursor":{"column":0,"row":0,"visible":true},"mode":null}}`}, failed()), RuleRegion},
		{"epoch closed, no terminal", body(textAt(100), obsAt(100, "")), RuleTerminalLast},
		{"observation focus not region", body(textAt(100), rec{KindObservation, `{"at_ms":100,"state":1,"events":[],"ui":{"regions":[],"focus":"x","cursor":{"column":0,"row":0,"visible":true},"mode":null}}`}, failed()), RuleFocus},
		{"observation cursor", body(textAt(100), rec{KindObservation, `{"at_ms":100,"state":1,"events":[],"ui":{"regions":[],"focus":null,"cursor":{"column":0,"row":0,"visible":1},"mode":null}}`}, failed()), RuleCursor},
		{"observation event", body(textAt(100), rec{KindObservation, `{"at_ms":100,"state":1,"events":[{"type":"","data":null}],"ui":{"regions":[],"focus":null,"cursor":{"column":0,"row":0,"visible":true},"mode":null}}`}, failed()), RuleEvent},
		{"observation event data missing", body(textAt(100), rec{KindObservation, `{"at_ms":100,"state":1,"events":[{"type":"t"}],"ui":{"regions":[],"focus":null,"cursor":{"column":0,"row":0,"visible":true},"mode":null}}`}, failed()), RuleEvent},
		{"observation frame", body(textAt(100), obsAt(100, `,"frame":{"lines":["ab","cd"],"columns":2,"rows":2}`), failed()), ""},
		{"observation frame rows", body(textAt(100), obsAt(100, `,"frame":{"lines":["ab"],"columns":2,"rows":2}`), failed()), RuleFrame},
		{"observation running", body(textAt(100), obsAt(100, `,"process":{"state":"running"}`), failed()), ""},
		{"observation running exit", body(textAt(100), obsAt(100, `,"process":{"state":"running","exit":{"kind":"code","value":0}}`), failed()), RuleProcess},
		{"observation exited no exit", body(textAt(100), obsAt(100, `,"process":{"state":"exited"}`), failed()), RuleProcess},
	}
	for _, tc := range cases {
		if tc.name == "named timezone" {
			cfg := strings.Replace(configJSON, `"UTC"`, `"Europe/Berlin"`, 1)
			rs := []rec{{KindRunStarted, `{"config":` + cfg + `,"subject":` + subjectJSON + `}`}}
			for _, c := range []string{"seed", "clock", "locale"} {
				rs = append(rs, appliedRec(c, ""))
			}
			tc.rs = append(rs, rec{KindCapability, `{"constraint":"timezone","status":"applied","effective":"Europe/Berlin","tier":"os"}`}, failed())
			tc.want = RuleCapTimezone
		}
		t.Run(tc.name, func(t *testing.T) {
			data := build(t, tc.rs)
			tr, err := Parse(data)
			sameAsStream(t, data, tr, err)
			if got := ruleOf(t, err); got != tc.want {
				t.Fatalf("rule %q, want %q (%v)", got, tc.want, err)
			}
			if err != nil {
				return
			}
			out, err := Encode(tr)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Normalized) == 0 && !bytes.Equal(out, data) {
				t.Fatalf("re-encode differs")
			}
		})
	}
}

// TestFramingRules covers the whole-file and per-line rules before the
// semantic passes.
func TestFramingRules(t *testing.T) {
	good := build(t, body(finished(0)))
	line0 := bytes.SplitN(good, []byte("\n"), 2)[0]
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"valid", good, ""},
		{"empty", nil, RuleFinalLF},
		{"bom", append([]byte("\xef\xbb\xbf"), good...), RuleBOM},
		{"cr", bytes.Replace(good, []byte("\n"), []byte("\r\n"), 1), RuleCR},
		{"no final lf", good[:len(good)-1], RuleFinalLF},
		{"empty line", bytes.Replace(good, []byte("\n"), []byte("\n\n"), 1), RuleEmptyLine},
		{"leading empty line", append([]byte("\n"), good...), RuleEmptyLine},
		{"not canonical (space)", append(bytes.Replace(line0, []byte(`,"kind"`), []byte(`, "kind"`), 1), '\n'), RuleCanonical},
		{"not canonical (order)", []byte(`{"seq":0,"id":"a"}` + "\n"), RuleCanonical},
		{"not canonical (escape)", []byte(`{"a":"\/"}` + "\n"), RuleCanonical},
		{"not canonical (1.0)", []byte(`{"a":1.0}` + "\n"), RuleCanonical},
		{"not canonical (1e21)", []byte(`{"a":1e21}` + "\n"), RuleCanonical},
		{"canonical float passes step 6", []byte(`{"a":1e+21}` + "\n"), RuleEnvelopeMembers},
		{"not an object", []byte("[]\n"), canon.RuleNotObject},
		{"syntax", []byte("{\n"), canon.RuleSyntax},
		{"utf8", []byte("{\"a\":\"\xff\"}\n"), canon.RuleUTF8},
		{"duplicate", []byte(`{"a":1,"a":2}` + "\n"), canon.RuleDuplicateMember},
		{"lone surrogate", []byte(`{"a":"\ud800"}` + "\n"), canon.RuleLoneSurrogate},
		{"nan", []byte(`{"a":NaN}` + "\n"), canon.RuleNonFinite},
		{"overflow", []byte(`{"a":1e400}` + "\n"), canon.RuleNonFinite},
		{"2^53", []byte(`{"a":9007199254740992}` + "\n"), canon.RuleIntegerRange},
		{"long digits", []byte(`{"a":` + strings.Repeat("9", 5000) + "}\n"), canon.RuleIntegerRange},
		{"duplicate id", bytes.Replace(good, []byte(`"id":"record-0001"`), []byte(`"id":"record-0000"`), 1), RuleDuplicateID},
		{"decode error beats earlier non-canonical line", []byte("{\"b\":1, \"a\":2}\n{\"a\":\n"), canon.RuleSyntax},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Parse(tc.data)
			sameAsStream(t, tc.data, tr, err)
			if got := ruleOf(t, err); got != tc.want {
				t.Fatalf("rule %q, want %q (%v)", got, tc.want, err)
			}
		})
	}
}

// TestErrorFields checks Record, Line and Kind, and that errors.AsType
// reaches the cause.
func TestErrorFields(t *testing.T) {
	_, err := Parse(build(t, body(textAt(100), rec{KindInputKey, `{"at_ms":100,"keys":["c"]}`}, failed())))
	e, ok := errors.AsType[*Error](err)
	if !ok {
		t.Fatalf("got %v", err)
	}
	if e.Record != 10 || e.Line != 11 || e.Kind != KindInputKey || e.Rule != RuleEpochOpen {
		t.Fatalf("got %+v", e)
	}
	_, err = Parse([]byte(`{"a":1,"a":2}` + "\n"))
	if _, ok := errors.AsType[*canon.Error](err); !ok {
		t.Fatalf("cause not reachable: %v", err)
	}
	_, err = Parse([]byte("x"))
	if e, _ := errors.AsType[*Error](err); e == nil || e.Record != -1 {
		t.Fatalf("whole-file error: %+v", e)
	}
}
