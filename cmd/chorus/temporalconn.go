package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/workflows"
)

// temporalConfig is how a chorus process reaches Temporal (docs/security.md): the address and
// namespace; TLS, mTLS or an API key; and the payload keys that encrypt what it hands Temporal.
// The TLS and API-key settings read the same variables as the temporal CLI, so one environment
// file serves both.
type temporalConfig struct {
	address   string
	namespace string

	tls                 bool   // TEMPORAL_TLS; implied by any other TLS setting or an API key
	tlsCert, tlsKey     string // TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY: a client certificate (mTLS)
	tlsCA               string // TEMPORAL_TLS_CA: the CA that signed the server's certificate
	tlsServerName       string // TEMPORAL_TLS_SERVER_NAME
	tlsSkipVerification bool   // TEMPORAL_TLS_DISABLE_HOST_VERIFICATION
	// apiKey is TEMPORAL_API_KEY, sent as a bearer token on every call; environment only, so it
	// never shows in a process list.
	apiKey string

	// payloadKeysFile and payloadKeyID choose the payload keys (CHORUS_PAYLOAD_KEYS inline, or a
	// file); see workflows.ParsePayloadKeys.
	payloadKeysFile string
	payloadKeyID    string
}

// temporalFlags registers the Temporal connection flags on cmd, defaults from the environment.
// withAddress adds --temporal-address (ops, bench); serve and dev take TEMPORAL_ADDRESS alone.
func (c *temporalConfig) flags(cmd *cobra.Command, withAddress bool, defaultAddress string) {
	f := cmd.Flags()
	if withAddress {
		f.StringVar(&c.address, "temporal-address", envOr("TEMPORAL_ADDRESS", defaultAddress), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
		f.StringVar(&c.namespace, "namespace", envOr("TEMPORAL_NAMESPACE", workflows.Namespace), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	} else {
		c.address = envOr("TEMPORAL_ADDRESS", defaultAddress)
		c.namespace = envOr("TEMPORAL_NAMESPACE", workflows.Namespace)
	}
	f.BoolVar(&c.tls, "temporal-tls", envBool("TEMPORAL_TLS"), "connect to Temporal over TLS (env TEMPORAL_TLS; implied by the other TLS settings and by TEMPORAL_API_KEY)")
	f.StringVar(&c.tlsCert, "temporal-tls-cert", envOr("TEMPORAL_TLS_CERT", ""), "client certificate file (PEM) for mTLS to Temporal (env TEMPORAL_TLS_CERT)")
	f.StringVar(&c.tlsKey, "temporal-tls-key", envOr("TEMPORAL_TLS_KEY", ""), "its private key file (PEM) (env TEMPORAL_TLS_KEY)")
	f.StringVar(&c.tlsCA, "temporal-tls-ca", envOr("TEMPORAL_TLS_CA", ""), "CA certificate file (PEM) that signed Temporal's certificate; default: the system's (env TEMPORAL_TLS_CA)")
	f.StringVar(&c.tlsServerName, "temporal-tls-server-name", envOr("TEMPORAL_TLS_SERVER_NAME", ""), "the name Temporal's certificate must carry, when not the address's host (env TEMPORAL_TLS_SERVER_NAME)")
	f.BoolVar(&c.tlsSkipVerification, "temporal-tls-disable-host-verification", envBool("TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"), "do not verify Temporal's certificate (tests only; env TEMPORAL_TLS_DISABLE_HOST_VERIFICATION)")
	c.apiKey = strings.TrimSpace(os.Getenv("TEMPORAL_API_KEY"))
	c.payloadFlags(cmd)
}

// payloadFlags registers the payload-key flags alone (chorus codec-server needs no connection).
func (c *temporalConfig) payloadFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.payloadKeysFile, "payload-keys-file", envOr("CHORUS_PAYLOAD_KEYS_FILE", ""), "file of payload encryption keys, one <id>:<base64 32 bytes> per line, the first sealing new payloads; or set CHORUS_PAYLOAD_KEYS (env CHORUS_PAYLOAD_KEYS_FILE)")
	f.StringVar(&c.payloadKeyID, "payload-key-id", envOr("CHORUS_PAYLOAD_KEY_ID", ""), "id of the payload key that seals new payloads (default: the first listed; none: seal nothing, still open sealed ones) (env CHORUS_PAYLOAD_KEY_ID)")
}

func envBool(name string) bool {
	b, _ := strconv.ParseBool(strings.TrimSpace(os.Getenv(name)))
	return b
}

// payloadKeys reads the payload keys: CHORUS_PAYLOAD_KEYS, or the file; nil when neither is set.
func (c *temporalConfig) payloadKeys() (*workflows.PayloadKeys, error) {
	text := os.Getenv("CHORUS_PAYLOAD_KEYS")
	if c.payloadKeysFile != "" {
		if strings.TrimSpace(text) != "" {
			return nil, errors.New("set CHORUS_PAYLOAD_KEYS or --payload-keys-file (CHORUS_PAYLOAD_KEYS_FILE), not both")
		}
		b, err := os.ReadFile(c.payloadKeysFile)
		if err != nil {
			return nil, fmt.Errorf("payload keys: %w", err)
		}
		text = string(b)
	}
	return workflows.ParsePayloadKeys(text, c.payloadKeyID)
}

// converters are the data and failure converters for the configured payload keys.
func (c *temporalConfig) converters() (workflows.Converters, error) {
	keys, err := c.payloadKeys()
	if err != nil {
		return workflows.Converters{}, err
	}
	return workflows.NewConverters(keys), nil
}

// secured reports whether any TLS or API-key setting is given.
func (c *temporalConfig) secured() bool {
	return c.tls || c.tlsCert != "" || c.tlsKey != "" || c.tlsCA != "" || c.tlsServerName != "" || c.tlsSkipVerification || c.apiKey != ""
}

// connectionOptions builds the client's TLS settings and credentials from c.
func (c *temporalConfig) connectionOptions() (client.ConnectionOptions, client.Credentials, error) {
	var opts client.ConnectionOptions
	var creds client.Credentials
	if !c.secured() {
		return opts, nil, nil
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return opts, nil, errors.New("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: give both for mTLS, or neither")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.tlsServerName, InsecureSkipVerify: c.tlsSkipVerification} //nolint:gosec // an explicit, documented test setting
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return opts, nil, fmt.Errorf("TEMPORAL_TLS_CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return opts, nil, fmt.Errorf("TEMPORAL_TLS_CA %s holds no PEM certificate", c.tlsCA)
		}
		cfg.RootCAs = pool
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return opts, nil, fmt.Errorf("TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	opts.TLS = cfg // an API key goes over TLS only, as the temporal CLI and SDK have it
	if c.apiKey != "" {
		creds = client.NewAPIKeyStaticCredentials(c.apiKey)
	}
	return opts, creds, nil
}

// describe names the connection for logs: address, namespace and how it is secured, never a
// secret.
func (c *temporalConfig) describe() string {
	how := "plain gRPC"
	switch {
	case c.apiKey != "" && c.tlsCert != "":
		how = "mTLS and an API key"
	case c.apiKey != "":
		how = "TLS and an API key"
	case c.tlsCert != "":
		how = "mTLS"
	case c.secured():
		how = "TLS"
	}
	return fmt.Sprintf("%s (namespace %q, %s)", c.address, c.namespace, how)
}

// dialTemporal connects to Temporal as c says, retrying until it answers or wait passes.
func dialTemporal(ctx context.Context, log *slog.Logger, c temporalConfig, wait time.Duration) (client.Client, error) {
	return dialTemporalMetrics(ctx, log, c, wait, nil)
}

// dialTemporalMetrics is dialTemporal with the SDK's metrics going to metrics (nil: none) and
// the client's (and its workers') calls going through interceptors (tracing).
func dialTemporalMetrics(ctx context.Context, log *slog.Logger, c temporalConfig, wait time.Duration,
	metrics client.MetricsHandler, interceptors ...interceptor.ClientInterceptor) (client.Client, error) {
	conn, creds, err := c.connectionOptions()
	if err != nil {
		return nil, err
	}
	conv, err := c.converters()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	quiet := mcp.LevelFloor(log, slog.LevelWarn) // the SDK logs every poll at info
	for attempt := 0; ; attempt++ {
		tc, err := client.DialContext(ctx, client.Options{HostPort: c.address, Namespace: c.namespace,
			Logger: tlog.NewStructuredLogger(workflows.QuietOutcomes(quiet)), DataConverter: conv.Data,
			FailureConverter: conv.Failure, MetricsHandler: metrics, ConnectionOptions: conn, Credentials: creds,
			Interceptors: interceptors})
		if err == nil {
			return tc, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("cannot reach Temporal at %s: %w", c.describe(), err)
		}
		if attempt == 3 {
			log.Info("waiting for Temporal", "address", c.address, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
