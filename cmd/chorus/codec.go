package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/converter"

	"github.com/chorus-dev/chorus/workflows"
)

// The codec server (docs/security.md "Payload encryption"): the Temporal UI and the temporal
// CLI send it the encrypted payloads they show, and it answers them decoded, for callers that
// prove they may read them. It holds the payload keys; the UI and Temporal never do.

type codecOptions struct {
	addr      string
	uiOrigins []string
	temporal  temporalConfig // only its payload keys are used
}

func newCodecServerCmd() *cobra.Command {
	o := codecOptions{}
	cmd := &cobra.Command{
		Use:   "codec-server",
		Short: "Decode encrypted Temporal payloads for the Temporal UI and CLI, for operators holding a codec token",
		Long: `Serve Temporal's remote codec protocol (POST /decode and /encode) with Chorus's payload keys, so the
Temporal UI and the temporal CLI show the workflows' payloads in the clear to operators who may read
them, while Temporal itself stores only ciphertext.

Keys: CHORUS_PAYLOAD_KEYS or --payload-keys-file, as the workers have them. Callers: a token from
CHORUS_CODEC_TOKENS (comma-separated, so tokens rotate; environment only), sent as
"Authorization: Bearer <token>" (temporal CLI: --codec-endpoint http://... --codec-auth "Bearer
<token>"), or, for the Temporal UI, as a cookie this server sets once the operator signs in at
/login (the UI's codec setting "Include cross-origin credentials" sends it). --ui-origin names the
Temporal UI's origin, which CORS admits with credentials.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, err := o.temporal.payloadKeys()
			if err != nil {
				return err
			}
			if keys == nil {
				return errors.New("no payload keys: set CHORUS_PAYLOAD_KEYS or --payload-keys-file to the workers' keys")
			}
			tokens := envList("CHORUS_CODEC_TOKENS")
			if len(tokens) == 0 {
				return errors.New("no codec tokens: set CHORUS_CODEC_TOKENS (e.g. $(openssl rand -hex 32)); " +
					"only callers holding one get payloads decoded")
			}
			log := newLogger()
			ln, err := net.Listen("tcp", o.addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (choose another with --addr)", o.addr, err)
			}
			srv := &http.Server{Handler: codecHandler(keys, tokens, o.uiOrigins, log), ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout: time.Minute}
			log.Info("codec server listening", "addr", ln.Addr().String(), "keys", strings.Join(keys.IDs(), ", "),
				"uiOrigins", strings.Join(o.uiOrigins, ", "))
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case <-cmd.Context().Done():
				return srv.Close()
			case err := <-errc:
				return err
			}
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", envOr("CHORUS_CODEC_ADDR", "127.0.0.1:8081"), "HTTP listen address (env CHORUS_CODEC_ADDR)")
	cmd.Flags().StringSliceVar(&o.uiOrigins, "ui-origin", envList("CHORUS_CODEC_UI_ORIGINS"),
		"origin of the Temporal UI that may call it from the browser, e.g. https://temporal.example.com (env CHORUS_CODEC_UI_ORIGINS)")
	o.temporal.payloadFlags(cmd)
	return cmd
}

// codecCookie carries a codec token for browsers (the Temporal UI), set by POST /login.
const codecCookie = "chorus_codec"

// maxCodecBody bounds a codec request: a few payloads of up to Temporal's 2 MB each.
const maxCodecBody = 16 << 20

// codecHandler serves POST /encode and /decode (converter.NewPayloadCodecHTTPHandler with the
// keys' codec) to callers holding one of tokens, /login for browsers, and CORS for uiOrigins.
func codecHandler(keys *workflows.PayloadKeys, tokens []string, uiOrigins []string, log *slog.Logger) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(keys.Codec())
	sums := make([][32]byte, len(tokens))
	for i, t := range tokens {
		sums[i] = sha256.Sum256([]byte(t))
	}
	valid := func(token string) bool {
		if token == "" {
			return false
		}
		sum := sha256.Sum256([]byte(token))
		ok := 0
		for _, s := range sums {
			ok |= subtle.ConstantTimeCompare(sum[:], s[:])
		}
		return ok == 1
	}
	// authorized: a token in the Authorization header or in the sign-in cookie (the UI may send
	// its own access token in the header beside the cookie).
	authorized := func(r *http.Request) bool {
		if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") &&
			valid(strings.TrimSpace(tok)) {
			return true
		}
		c, err := r.Cookie(codecCookie)
		return err == nil && valid(c.Value)
	}
	allowedOrigin := func(origin string) bool {
		for _, o := range uiOrigins {
			if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
				return true
			}
		}
		return false
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Chorus codec server</title><form method="post" action="login">`+
			`<label>Codec token <input type="password" name="token" autofocus></label> <button>Sign in</button></form>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		token := r.PostFormValue("token")
		if !valid(token) {
			log.Warn("codec server: refused a sign-in", "remote", r.RemoteAddr)
			http.Error(w, "That is not a codec token of this server.", http.StatusUnauthorized)
			return
		}
		// SameSite=None so the Temporal UI's cross-origin calls carry it; Secure, as browsers
		// require for that (they count http://localhost as secure).
		http.SetCookie(w, &http.Cookie{Name: codecCookie, Value: token, Path: "/", HttpOnly: true, Secure: true,
			SameSite: http.SameSiteNoneMode, MaxAge: 12 * 3600})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><p>Signed in for 12 hours. The Temporal UI at %s now shows decoded payloads "+
			"(its codec setting must include cross-origin credentials).</p>", html.EscapeString(strings.Join(uiOrigins, ", ")))
	})
	for _, path := range []string{"/encode", "/decode"} {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			if !authorized(r) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="chorus-codec"`)
				http.Error(w, "A codec token is required: send Authorization: Bearer <token>, or sign in at /login.",
					http.StatusUnauthorized)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxCodecBody)
			codec.ServeHTTP(w, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if origin := r.Header.Get("Origin"); origin != "" {
			if !allowedOrigin(origin) {
				http.Error(w, "Forbidden: this origin may not call the codec server; add it with --ui-origin.", http.StatusForbidden)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, X-Namespace")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}
