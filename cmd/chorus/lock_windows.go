package main

// lockDataDir is a no-op on Windows; do not run two chorus dev on one data dir there.
func lockDataDir(string) (func(), error) { return func() {}, nil }
