//go:build !unix

package runner

import "os/exec"

// lockStateDir is a no-op where flock is missing; do not run two runners on one state directory there.
func lockStateDir(string) (func(), error) { return func() {}, nil }

// inOwnGroup: without process groups, cancelling a turn kills its shell only.
func inOwnGroup(*exec.Cmd) {}
