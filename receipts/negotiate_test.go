package receipts

import (
	"reflect"
	"testing"

	"github.com/termverify/termverify-sandbox/config"
)

func baseRequest() Request {
	return Request{
		Seed: "42", ClockInitialMS: 0, Locale: "en-US", Timezone: "UTC", RootID: "app", RootMapped: true,
		RootDir: "/work", NetworkMode: config.NetworkDeny, Isolation: IsolationAuto,
		Filesystem: Mechanism{Tier: OS, Word: MechanismMountNS},
		Network:    Mechanism{Tier: OS, Word: MechanismNetNS},
	}
}

func tiers(o Outcome) []string {
	var out []string
	for _, r := range o.Receipts {
		if r.Status == Unsupported {
			out = append(out, string(r.Constraint)+":unsupported")
			continue
		}
		out = append(out, string(r.Constraint)+":"+string(r.Tier))
	}
	return out
}

func TestNegotiate(t *testing.T) {
	noMech := Mechanism{Reason: "mount namespace: EPERM"}
	cases := []struct {
		name   string
		edit   func(*Request)
		want   []string
		code   string
		downgr int
	}{
		{"os where applied", func(*Request) {}, []string{"seed:delivered", "clock:delivered", "locale:delivered",
			"timezone:delivered", "terminal:delivered", "filesystem:os", "network:os"}, "", 0},
		{"isolation none delivers all", func(r *Request) { r.Isolation = IsolationNone }, []string{"seed:delivered",
			"clock:delivered", "locale:delivered", "timezone:delivered", "terminal:delivered", "filesystem:delivered",
			"network:delivered"}, "", 0},
		{"auto downgrades", func(r *Request) { r.Filesystem = noMech }, []string{"seed:delivered", "clock:delivered",
			"locale:delivered", "timezone:delivered", "terminal:delivered", "filesystem:delivered", "network:os"}, "", 1},
		{"isolation os refuses", func(r *Request) { r.Isolation = IsolationOS; r.Filesystem = noMech },
			[]string{"seed:delivered", "clock:delivered", "locale:delivered", "timezone:delivered", "terminal:delivered",
				"filesystem:unsupported"}, CodeNotEnforced, 0},
		{"named timezone", func(r *Request) { r.Timezone = "Europe/Berlin" }, []string{"seed:delivered",
			"clock:delivered", "locale:delivered", "timezone:unsupported"}, CodeUnsupported, 0},
		{"terminal caps", func(r *Request) { r.TerminalCaps = 1 }, []string{"seed:delivered", "clock:delivered",
			"locale:delivered", "timezone:delivered", "terminal:unsupported"}, CodeUnsupported, 0},
		{"unmapped root", func(r *Request) { r.RootMapped = false }, []string{"seed:delivered", "clock:delivered",
			"locale:delivered", "timezone:delivered", "terminal:delivered", "filesystem:unsupported"}, CodeUnsupported, 0},
		{"allow-list without netns", func(r *Request) { r.NetworkMode = config.NetworkAllowList; r.Isolation = IsolationNone },
			[]string{"seed:delivered", "clock:delivered", "locale:delivered", "timezone:delivered",
				"terminal:delivered", "filesystem:delivered", "network:unsupported"}, CodeUnsupported, 0},
		{"allow-list under isolation os without netns is not enforced", func(r *Request) {
			r.NetworkMode = config.NetworkAllowList
			r.Isolation = IsolationOS
			r.Network = Mechanism{Reason: "network namespace: EPERM"}
		}, []string{"seed:delivered", "clock:delivered", "locale:delivered", "timezone:delivered",
			"terminal:delivered", "filesystem:os", "network:unsupported"}, CodeNotEnforced, 0},
		{"allow-list under isolation auto without netns is unsupported", func(r *Request) {
			r.NetworkMode = config.NetworkAllowList
			r.Network = Mechanism{Reason: "network namespace: EPERM"}
		}, []string{"seed:delivered", "clock:delivered", "locale:delivered", "timezone:delivered",
			"terminal:delivered", "filesystem:os", "network:unsupported"}, CodeUnsupported, 0},
		{"allow-list with netns", func(r *Request) { r.NetworkMode = config.NetworkAllowList; r.Network.Word = MechanismAllowNS },
			[]string{"seed:delivered", "clock:delivered", "locale:delivered", "timezone:delivered",
				"terminal:delivered", "filesystem:os", "network:os"}, "", 0},
		{"require network os with isolation none", func(r *Request) {
			r.Isolation = IsolationNone
			r.Require = map[Constraint]Tier{Network: OS}
		}, []string{"seed:delivered", "clock:delivered", "locale:delivered", "timezone:delivered",
			"terminal:delivered", "filesystem:delivered", "network:unsupported"}, CodeNotEnforced, 0},
		{"require seed os", func(r *Request) { r.Require = map[Constraint]Tier{Seed: OS} },
			[]string{"seed:unsupported"}, CodeNotEnforced, 0},
		{"require delivered met", func(r *Request) { r.Require = map[Constraint]Tier{Seed: Delivered, Network: Delivered} },
			[]string{"seed:delivered", "clock:delivered", "locale:delivered", "timezone:delivered",
				"terminal:delivered", "filesystem:os", "network:os"}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest()
			tc.edit(&req)
			out := Negotiate(req)
			if got := tiers(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("receipts = %v\nwant       %v", got, tc.want)
			}
			switch {
			case tc.code == "" && out.Refusal != nil:
				t.Fatalf("refusal %+v, want none", out.Refusal)
			case tc.code != "" && (out.Refusal == nil || out.Refusal.Code != tc.code):
				t.Fatalf("refusal %+v, want code %s", out.Refusal, tc.code)
			}
			if len(out.Downgrades) != tc.downgr {
				t.Fatalf("downgrades = %v, want %d", out.Downgrades, tc.downgr)
			}
			for _, r := range out.Receipts {
				if r.Tier == OS && (r.Delivery != nil || r.Mechanism == "") {
					t.Errorf("%s: os receipt must name a mechanism and carry no delivery: %+v", r.Constraint, r)
				}
				if r.Tier == Delivered && r.Delivery == nil {
					t.Errorf("%s: delivered receipt without delivery", r.Constraint)
				}
			}
		})
	}
}

func TestNegotiateEnv(t *testing.T) {
	req := baseRequest()
	req.Isolation = IsolationNone
	req.RootDir = "/srv/app"
	out := Negotiate(req)
	want := []string{"TERMVERIFY_CLOCK_INITIAL_MS=0", "TERMVERIFY_FS_ROOT=/srv/app", "TERMVERIFY_LOCALE=en-US",
		"TERMVERIFY_NETWORK=deny", "TERMVERIFY_SEED=42", "TERMVERIFY_TIMEZONE=UTC", "TZ=UTC0"}
	if got := EnvList(out.Env); !reflect.DeepEqual(got, want) {
		t.Fatalf("env = %v\nwant  %v", got, want)
	}
	fs := out.Receipts[5]
	if fs.Delivery.Cwd != "/srv/app" {
		t.Fatalf("filesystem cwd = %q", fs.Delivery.Cwd)
	}
}

func TestParseRequire(t *testing.T) {
	cases := []struct {
		in   string
		want map[Constraint]Tier
		ok   bool
	}{
		{"", map[Constraint]Tier{}, true},
		{"filesystem=os,network=os", map[Constraint]Tier{Filesystem: OS, Network: OS}, true},
		{"seed=delivered", map[Constraint]Tier{Seed: Delivered}, true},
		{"disk=os", nil, false},
		{"network=strong", nil, false},
		{"network", nil, false},
		{"network=os,network=delivered", nil, false},
	}
	for _, tc := range cases {
		got, err := ParseRequire(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseRequire(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestReportCheck(t *testing.T) {
	r := Report{RunID: "r", Outcome: "run.finished"}
	for _, c := range Constraints() {
		tier := Delivered
		if c == Filesystem {
			tier = OS
		}
		r.Receipts = append(r.Receipts, Row{Constraint: c, Status: Applied, Tier: tier})
	}
	r.Finish()
	if r.Weakest != Delivered || !r.Complete {
		t.Fatalf("Finish: weakest %q complete %v", r.Weakest, r.Complete)
	}
	v := r.Check(map[Constraint]Tier{Filesystem: OS, Network: OS})
	if len(v) != 1 || v[0].Constraint != Network || v[0].Got != "delivered" {
		t.Fatalf("Check = %v", v)
	}
	r.Receipts = r.Receipts[:3]
	r.Finish()
	if r.Complete {
		t.Fatal("Complete with three receipts")
	}
	if v := r.Check(map[Constraint]Tier{Network: Delivered}); len(v) != 1 || v[0].Got != "no receipt" {
		t.Fatalf("Check on missing receipt = %v", v)
	}
}
