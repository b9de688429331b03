package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/workflows/devserver"
)

// devAddressFile is where chorus dev records, in its data dir, the Temporal it runs with (its own
// dev server, or TEMPORAL_ADDRESS): devserver.WriteAddressFile, the address on the first line and
// the namespace on the second. chorus ops reads the address, so that --data-dir alone points ops
// at that stack's Temporal.
const devAddressFile = "<data-dir>/" + devserver.AddressFile

// readDevAddress reads the address the dev stack of dataDir recorded, if any: the file's first
// line (a data dir written before the namespace was recorded holds that line alone).
func readDevAddress(dataDir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, devserver.AddressFile))
	if err != nil {
		return "", false
	}
	addr, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	addr = strings.TrimSpace(addr)
	return addr, addr != ""
}
