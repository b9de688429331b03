package devserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AddressFile is the file in a `chorus dev` data dir that names the Temporal cluster of that
// stack: its frontend address on the first line and the namespace on the second. `chorus dev`
// writes it at every start (the address of the server it launched, or TEMPORAL_ADDRESS), so that
// `chorus ops --data-dir` reaches the same cluster as the stack.
const AddressFile = "temporal.address"

// WriteAddressFile records address and namespace in dataDir/AddressFile.
func WriteAddressFile(dataDir, address, namespace string) error {
	path := filepath.Join(dataDir, AddressFile)
	if err := os.WriteFile(path, []byte(address+"\n"+namespace+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the Temporal address in %s: %w", path, err)
	}
	return nil
}

// ReadAddressFile returns the address and namespace recorded in dataDir/AddressFile; the error
// wraps os.ErrNotExist when the data dir has none (no `chorus dev` ran there).
func ReadAddressFile(dataDir string) (address, namespace string, err error) {
	path := filepath.Join(dataDir, AddressFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) == "" || strings.TrimSpace(lines[1]) == "" {
		return "", "", errors.New(path + " must hold the Temporal address on its first line and the namespace on its second; " +
			"start `chorus dev` again to rewrite it")
	}
	return strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1]), nil
}
