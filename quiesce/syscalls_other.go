//go:build !amd64 && !arm64

package quiesce

// waitCalls is empty where no table has been written: Evaluate returns
// ErrUnsupportedArch.
var waitCalls = map[uint64]waitKind{}
