package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Headers of a delivery (docs/rules.md §7.5).
const (
	// HeaderID carries the delivery's uuid: its idempotency id, the same on every attempt and
	// redelivery of one event to one webhook.
	HeaderID = "Chorus-Webhook-Id"
	// HeaderEvent carries the event's kind (vocab.EventKinds).
	HeaderEvent = "Chorus-Event"
	// HeaderTimestamp carries the attempt's time, in Unix seconds, as signed.
	HeaderTimestamp = "Chorus-Timestamp"
	// HeaderSignature carries "v1=" and the hex HMAC-SHA256 of "<timestamp>.<body>" under the
	// webhook's secret.
	HeaderSignature = "Chorus-Signature"
	// UserAgent is the User-Agent of every delivery.
	UserAgent = "chorus-webhooks"
)

// SecretPrefix starts every webhook secret.
const SecretPrefix = "whsec_"

// NewSecret makes a webhook secret: SecretPrefix and 32 random bytes in unpadded base64url.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the system has no randomness)
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// Sign is the Chorus-Signature header of body sent at timestamp (Unix seconds) under secret:
// "v1=" + hex(HMAC-SHA256(secret, "<timestamp>.<body>")). The key is the whole secret string,
// prefix included, as the receiver was given it.
func Sign(secret string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a delivery as a receiver should: the signature header (one or more
// comma-separated "v1=..." values) matches body and the timestamp header under secret, in
// constant time, and the timestamp is within tolerance of now (0: not checked), which bounds
// replays. It reports whether the delivery is genuine.
func Verify(secret, timestampHeader, signatureHeader string, body []byte, now time.Time, tolerance time.Duration) bool {
	ts, err := strconv.ParseInt(strings.TrimSpace(timestampHeader), 10, 64)
	if err != nil {
		return false
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
			return false
		}
	}
	want := Sign(secret, ts, body)
	for _, got := range strings.Split(signatureHeader, ",") {
		if hmac.Equal([]byte(strings.TrimSpace(got)), []byte(want)) {
			return true
		}
	}
	return false
}
