package wftest_test

import (
	"os"
	"testing"

	"github.com/chorus-dev/chorus/workflows/wftest"
)

func TestMain(m *testing.M) { os.Exit(wftest.Main(m)) }
