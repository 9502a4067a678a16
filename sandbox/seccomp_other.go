//go:build !amd64

package sandbox

// hasX32 is only meaningful on amd64.
const hasX32 = false

// auditArch reports that no filter is built for this architecture: Start
// fails with ErrUnsupportedArch rather than run without one.
func auditArch() (uint32, bool) { return 0, false }

func deniedSyscalls() []syscallRule { return nil }

func setIDRules() []setIDRule { return nil }
