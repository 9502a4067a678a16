package reaper

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestConstantsMatchC(t *testing.T) {
	strs, fds := cConstants()
	wantStrs := []string{Arg, ModeSandbox, ModeDirect, ModeNoop, ModeProcTrial, ModeDirectTerminal,
		ReportSeccomp, ReportStarted, ReportExecErr, ReportExited, ReportSignaled, ReportError}
	if !slices.Equal(strs, wantStrs) {
		t.Errorf("C strings %q, Go %q", strs, wantStrs)
	}
	if want := []int{FDLiveness, FDReport, FDGo}; !slices.Equal(fds, want) {
		t.Errorf("C descriptors %v, Go %v", fds, want)
	}
}

func TestEncodeFilter(t *testing.T) {
	prog := []unix.SockFilter{{Code: 0x0020, Jt: 1, Jf: 2, K: 0xc000003e}, {Code: 0x0006, K: 0x7fff0000}}
	if got, want := EncodeFilter(prog), "200001023e0000c0"+"060000000000ff7f"; got != want {
		t.Errorf("EncodeFilter = %s, want %s", got, want)
	}
	cases := []struct {
		ids     *IDs
		fsize   int64
		cgroups []int
		want    []string
	}{
		{nil, 0, nil, []string{Arg, ModeDirect, "-", "-", "-", "-", "--", "x"}},
		{&IDs{UID: 65534, GID: 65533}, 0, nil, []string{Arg, ModeDirect, "-", "65534:65533", "-", "-", "--", "x"}},
		{&IDs{UID: 65534, GID: 65533}, 1 << 20, nil, []string{Arg, ModeDirect, "-", "65534:65533", "1048576", "-", "--", "x"}},
		{nil, 0, []int{6}, []string{Arg, ModeDirect, "-", "-", "-", "6", "--", "x"}},
		{nil, 0, []int{6, 7, 12}, []string{Arg, ModeDirect, "-", "-", "-", "6,7,12", "--", "x"}},
	}
	for _, tc := range cases {
		if got := Args(ModeDirect, nil, tc.ids, tc.fsize, tc.cgroups, []string{"x"}); !slices.Equal(got, tc.want) {
			t.Errorf("Args(%+v, %d, %v) = %q, want %q", tc.ids, tc.fsize, tc.cgroups, got, tc.want)
		}
	}
}
