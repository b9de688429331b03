package app

import (
	"os"
	"testing"

	"github.com/chorus-dev/chorus/workflows/wftest"
)

// TestMain stops the shared Temporal dev server of the webhook tests when they end.
func TestMain(m *testing.M) { os.Exit(wftest.Main(m)) }
