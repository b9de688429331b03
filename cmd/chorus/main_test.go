package main

import (
	"os"
	"testing"
)

// runMainEnv, set in a test's child process, makes the test binary run as the chorus command
// (main) instead of the tests: end-to-end tests start `chorus` processes (a runner they kill, a
// script's `chorus mcp call`) without building the binary.
const runMainEnv = "CHORUS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
