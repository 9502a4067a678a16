package supervisor

// InputKinds is Mode.InputKinds for the mode pty picks.
//
// Deprecated: kept only while cmd/termverify-sandbox/replay.go moves to
// Mode.InputKinds; it goes then (no exported function takes a pty bool).
func InputKinds(pty bool) []string {
	if pty {
		return ModePTY.InputKinds()
	}
	return ModeControl.InputKinds()
}
