package workflows

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Payload encryption (docs/security.md): with keys configured, every payload Chorus hands to
// Temporal (workflow and activity inputs and results, update arguments and outcomes, memos,
// summaries and current details, failure messages) is sealed with AES-256-GCM before it leaves
// the process, so a reader of Temporal's database, its UI or its API reads ciphertext. A codec
// server (`chorus codec-server`) decodes for operators allowed to read.
//
// An encrypted payload has encoding MetadataEncodingEncrypted and names its key
// (MetadataEncryptionKeyID), so keys rotate: new payloads are sealed with the active key, and
// every listed key still opens the payloads it sealed. A payload that is not encrypted is passed
// through as it is, so turning encryption on is safe for running workflows (their histories
// were written in the clear), and so is keeping old keys listed while they may still be read.

const (
	// MetadataEncodingEncrypted is the encoding of an encrypted payload.
	MetadataEncodingEncrypted = "binary/encrypted"
	// MetadataEncryptionKeyID names the key that sealed an encrypted payload.
	MetadataEncryptionKeyID = "encryption-key-id"
	// NoEncryption as the active key id keeps payloads in the clear while the listed keys still
	// open encrypted ones: the way to turn encryption off.
	NoEncryption = "none"
)

// PayloadKeys are the AES-256 keys payloads are sealed and opened with, by id.
type PayloadKeys struct {
	active string // "" or NoEncryption: seal nothing
	aeads  map[string]cipher.AEAD
	order  []string
}

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParsePayloadKeys reads keys written as "<id>:<key>" entries separated by commas, spaces or
// newlines, each key 32 bytes in standard or URL-safe base64 (`openssl rand -base64 32`).
// Payloads are sealed with the key named active, or with the first one listed when active is
// empty; active "none" seals nothing. Text that is only whitespace yields nil: no encryption.
func ParsePayloadKeys(text, active string) (*PayloadKeys, error) {
	entries := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	if len(entries) == 0 {
		if active != "" && active != NoEncryption {
			return nil, fmt.Errorf("payload key id %q is set but no payload keys are: set CHORUS_PAYLOAD_KEYS or "+
				"CHORUS_PAYLOAD_KEYS_FILE", active)
		}
		return nil, nil
	}
	k := &PayloadKeys{aeads: map[string]cipher.AEAD{}}
	for i, e := range entries {
		id, enc, ok := strings.Cut(e, ":")
		if !ok || !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("payload key %d: write it as <id>:<base64 key>, the id of letters, digits, '.', '_' "+
				"or '-' (at most 64)", i+1)
		}
		if id == NoEncryption {
			return nil, fmt.Errorf("payload key %d: %q is reserved (it turns encryption off); choose another id", i+1, id)
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("payload key %q is listed twice", id)
		}
		raw, err := decodeKey(enc)
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("payload key %q must be 32 bytes in base64 (openssl rand -base64 32)", id)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[id] = aead
		k.order = append(k.order, id)
	}
	switch {
	case active == "":
		k.active = k.order[0]
	case active == NoEncryption:
		k.active = NoEncryption
	default:
		if _, ok := k.aeads[active]; !ok {
			return nil, fmt.Errorf("the active payload key %q is not among the keys listed (%s)", active,
				strings.Join(k.order, ", "))
		}
		k.active = active
	}
	return k, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// Active is the id of the key new payloads are sealed with, or "none".
func (k *PayloadKeys) Active() string {
	if k.active == "" {
		return NoEncryption
	}
	return k.active
}

// IDs lists the keys' ids, in the order given.
func (k *PayloadKeys) IDs() []string { return append([]string(nil), k.order...) }

// Codec is the converter.PayloadCodec that seals and opens payloads with k.
func (k *PayloadKeys) Codec() converter.PayloadCodec { return encryptionCodec{k} }

// encryptionCodec seals each payload whole (its metadata and data, as protobuf) with AES-GCM:
// a random 12-byte nonce, then the sealed bytes; the key id is authenticated data.
type encryptionCodec struct{ keys *PayloadKeys }

// Encode seals payloads with the active key (none: passes them as they are).
func (c encryptionCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.Active()
	if id == NoEncryption {
		return payloads, nil
	}
	aead := c.keys.aeads[id]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(MetadataEncodingEncrypted),
				MetadataEncryptionKeyID: []byte(id)},
			Data: aead.Seal(nonce, nonce, plain, []byte(id)),
		}
	}
	return out, nil
}

// Decode opens encrypted payloads with the key they name; others pass as they are.
func (c encryptionCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != MetadataEncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataEncryptionKeyID])
		aead, ok := c.keys.aeads[id]
		if !ok {
			return nil, fmt.Errorf("a payload is encrypted with key %q, which this process does not have: list it in "+
				"CHORUS_PAYLOAD_KEYS (keys in use: %s)", id, strings.Join(c.keys.order, ", "))
		}
		data := p.GetData()
		if len(data) < aead.NonceSize() {
			return nil, fmt.Errorf("a payload encrypted with key %q is too short to be one", id)
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("a payload encrypted with key %q does not open with it (another key of that id, or altered)", id)
		}
		var inner commonpb.Payload
		if err := proto.Unmarshal(plain, &inner); err != nil {
			return nil, fmt.Errorf("decrypt payload: %w", err)
		}
		out[i] = &inner
	}
	return out, nil
}

// Converters are the data and failure converters of every Chorus Temporal client, worker and
// replayer.
type Converters struct {
	Data    converter.DataConverter
	Failure converter.FailureConverter // nil: the SDK's default
}

// NewConverters returns the converters for keys: DataConverter alone when keys is nil (payloads
// in the clear), else it composed with the encryption codec, and a failure converter that moves
// failure messages and stack traces into an encrypted payload too.
func NewConverters(keys *PayloadKeys) Converters {
	if keys == nil {
		return Converters{Data: DataConverter()}
	}
	dc := converter.NewCodecDataConverter(DataConverter(), keys.Codec())
	return Converters{Data: dc, Failure: temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter: dc, EncodeCommonAttributes: keys.Active() != NoEncryption})}
}
