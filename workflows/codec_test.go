package workflows

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func testKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(b)
}

// Payloads are sealed with the active key, name it, open with any listed key, and pass through
// when they were never sealed; a key that is missing or wrong is an error that says so.
func TestPayloadEncryptionRotatesKeys(t *testing.T) {
	k1, k2 := testKey(t), testKey(t)
	in := CreateIdeaInput{Title: "Secret plan <b>", Content: ptr("the private text")}

	old, err := ParsePayloadKeys("k1:"+k1, "")
	require.NoError(t, err)
	sealed, err := NewConverters(old).Data.ToPayload(in)
	require.NoError(t, err)
	require.Equal(t, MetadataEncodingEncrypted, string(sealed.GetMetadata()[converter.MetadataEncoding]))
	require.Equal(t, "k1", string(sealed.GetMetadata()[MetadataEncryptionKeyID]))
	require.NotContains(t, string(sealed.GetData()), "Secret")
	again, err := NewConverters(old).Data.ToPayload(in)
	require.NoError(t, err)
	require.NotEqual(t, sealed.GetData(), again.GetData(), "a fresh nonce every time")

	// Rotation: k2 seals new payloads, k1 still opens the old ones.
	rotated, err := ParsePayloadKeys("k2:"+k2+"\nk1:"+k1, "")
	require.NoError(t, err)
	var back CreateIdeaInput
	require.NoError(t, NewConverters(rotated).Data.FromPayload(sealed, &back))
	require.Equal(t, in, back)
	fresh, err := NewConverters(rotated).Data.ToPayload(in)
	require.NoError(t, err)
	require.Equal(t, "k2", string(fresh.GetMetadata()[MetadataEncryptionKeyID]))

	// Payloads in the clear (histories from before encryption) open with keys configured.
	plain, err := DataConverter().ToPayload(in)
	require.NoError(t, err)
	require.NoError(t, NewConverters(rotated).Data.FromPayload(plain, &back))
	require.Equal(t, in, back)

	// "none" writes in the clear and still opens sealed payloads: how encryption is turned off.
	off, err := ParsePayloadKeys("k1:"+k1, NoEncryption)
	require.NoError(t, err)
	p, err := NewConverters(off).Data.ToPayload(in)
	require.NoError(t, err)
	require.Equal(t, converter.MetadataEncodingJSON, string(p.GetMetadata()[converter.MetadataEncoding]))
	require.NoError(t, NewConverters(off).Data.FromPayload(sealed, &back))

	// Without the key, or with another key under its id, nothing opens.
	other, err := ParsePayloadKeys("k2:"+k2, "")
	require.NoError(t, err)
	err = NewConverters(other).Data.FromPayload(sealed, &back)
	require.ErrorContains(t, err, `encrypted with key "k1", which this process does not have`)
	forged, err := ParsePayloadKeys("k1:"+k2, "")
	require.NoError(t, err)
	require.ErrorContains(t, NewConverters(forged).Data.FromPayload(sealed, &back), "does not open")
	require.Error(t, NewConverters(nil).Data.FromPayload(sealed, &back), "no keys: a sealed payload is not readable")

	// The codec alone, as the codec server runs it.
	dec, err := rotated.Codec().Decode([]*commonpb.Payload{sealed, plain})
	require.NoError(t, err)
	require.Equal(t, converter.MetadataEncodingJSON, string(dec[0].GetMetadata()[converter.MetadataEncoding]))
	require.Contains(t, string(dec[0].GetData()), "Secret plan <b>")
	require.Equal(t, plain, dec[1])
}

// Bad key configurations are refused with what to fix, never half-applied.
func TestParsePayloadKeysRefusesBadKeys(t *testing.T) {
	k := testKey(t)
	for _, c := range []struct{ text, active, want string }{
		{"k1", "", "write it as <id>:<base64 key>"},
		{"k1:short", "", "must be 32 bytes"},
		{"k1:" + k + ",k1:" + k, "", "listed twice"},
		{"none:" + k, "", "reserved"},
		{"k1:" + k, "k9", `the active payload key "k9" is not among the keys listed (k1)`},
		{"", "k1", "no payload keys are"},
		{"bad id:" + k, "", "write it as"},
	} {
		_, err := ParsePayloadKeys(c.text, c.active)
		require.ErrorContains(t, err, c.want, "%q", c.text)
		require.NotContains(t, err.Error(), k, "an error never shows a key")
	}
	keys, err := ParsePayloadKeys("  \n ", "")
	require.NoError(t, err)
	require.Nil(t, keys)
	keys, err = ParsePayloadKeys(" a:"+k+" ,\n b:"+strings.TrimRight(base64.URLEncoding.EncodeToString(make([]byte, 32)), "=")+"\n", "b")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, keys.IDs())
	require.Equal(t, "b", keys.Active())
}
