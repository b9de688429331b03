package main

import (
	"os"
	"path/filepath"
	"strings"
)

// devAddressFile is where chorus dev records, in its data dir, the address of the Temporal it
// runs with (its own dev server, or TEMPORAL_ADDRESS): one line, host:port. chorus ops reads it,
// so that --data-dir alone points ops at that stack's Temporal.
const devAddressFile = "<data-dir>/temporal.address"

func devAddressPath(dataDir string) string { return filepath.Join(dataDir, "temporal.address") }

// recordDevAddress writes addr to the data dir's temporal.address.
func recordDevAddress(dataDir, addr string) error {
	return os.WriteFile(devAddressPath(dataDir), []byte(addr+"\n"), 0o600)
}

// readDevAddress reads the address the dev stack of dataDir recorded, if any.
func readDevAddress(dataDir string) (string, bool) {
	b, err := os.ReadFile(devAddressPath(dataDir))
	if err != nil {
		return "", false
	}
	addr := strings.TrimSpace(string(b))
	return addr, addr != ""
}
