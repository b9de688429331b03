package vocab

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// The pure id helpers. A new random id (store.NewUUID) is not here: it is not a function of its
// input.

// chorusNS is the namespace of the name-based uuids Chorus derives
// (6f0a4b6e-5c1d-4d7e-9a43-3f2b8c1d9e70).
var chorusNS = [16]byte{0x6f, 0x0a, 0x4b, 0x6e, 0x5c, 0x1d, 0x4d, 0x7e, 0x9a, 0x43, 0x3f, 0x2b, 0x8c, 0x1d, 0x9e, 0x70}

// DerivedUUID returns a uuid determined by parts: the same parts always give the same uuid, so
// rows a workflow creates have ids that survive retries and replays. It is the SHA-1 name-based
// uuid (RFC 4122 version 5) of the parts joined by "/" in Chorus's namespace, laid out as a
// version-4 uuid like every other Chorus id (docs/rules.md §1.1): the hash bits are as
// unpredictable as random ones to anyone who does not know the parts. Workflows name rows and
// workflows with these ids, so changing this function changes workflow commands: do it only
// behind workflow.GetVersion.
func DerivedUUID(parts ...string) string {
	h := sha1.New()
	h.Write(chorusNS[:])
	h.Write([]byte(strings.Join(parts, "/")))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return formatUUID(u)
}

// formatUUID writes u as 8-4-4-4-12 lower-case hex.
func formatUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// IsUUID reports whether s is a canonical uuid: 36 characters, 8-4-4-4-12 hex digits of either
// case.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
