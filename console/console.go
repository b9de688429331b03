package console

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/chorus-dev/chorus/app"
)

// Path is where the console is served.
const Path = "/console"

// EventsPath is where console pages follow the event stream (GET /api/events with the session
// alone; the session cookie is sent only under Path). The server mounts the stream there.
const EventsPath = Path + "/events"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what the console needs. App is required; the rest have defaults.
type Config struct {
	App *app.App
	Log *slog.Logger
	// Secure marks cookies Secure (set it when the console is served over TLS, directly or
	// behind a proxy that terminates it). A request that arrives over TLS gets Secure cookies
	// whatever this says.
	Secure bool
	// SessionTTL is how long a sign-in lasts (default 12 h).
	SessionTTL time.Duration
	// SignInRate and SignInBurst bound sign-in attempts per client address (default 10 a minute,
	// bursts of 10).
	SignInRate  rate.Limit
	SignInBurst int
	// TrustedProxies are the reverse proxies in front of the console whose X-Forwarded-For is
	// believed: a sign-in attempt through them counts against the client that header names.
	// Without them, attempts count against the connection's peer (behind a proxy: all together).
	TrustedProxies []*net.IPNet
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// OIDC, when set, offers sign-in through an OpenID Connect provider beside sign-in links.
	OIDC *OIDCConfig
}

// Console serves the pages. Build it with New and mount it with Mount.
type Console struct {
	cfg   Config
	app   *app.App
	log   *slog.Logger
	pages map[string]*template.Template
	// client is the address a sign-in attempt counts against (Config.TrustedProxies).
	client echo.IPExtractor
	oidc   *oidcClient // nil without Config.OIDC
}

// New parses the templates and checks the configuration.
func New(cfg Config) (*Console, error) {
	if cfg.App == nil || cfg.App.Store == nil {
		return nil, fmt.Errorf("console: App with a Store is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.SignInRate <= 0 {
		cfg.SignInRate, cfg.SignInBurst = rate.Every(6*time.Second), 10
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Console{cfg: cfg, app: cfg.App, log: cfg.Log, client: echo.ExtractIPDirect()}
	if len(cfg.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range cfg.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(n))
		}
		c.client = echo.ExtractIPFromXFFHeader(trust...)
	}
	if cfg.OIDC != nil {
		if err := cfg.OIDC.Validate(); err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
		c.oidc = &oidcClient{cfg: *cfg.OIDC}
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	return c, nil
}

// Mount adds the console's routes to e: the sign-in pages (rate-limited), the static files,
// and every page behind a signed-in session.
func (c *Console) Mount(e *echo.Echo) {
	static, _ := fs.Sub(staticFS, "static")
	e.GET(Path, func(ctx echo.Context) error { return ctx.Redirect(http.StatusSeeOther, Path+"/") })
	g := e.Group(Path, c.securityHeaders)
	g.GET("/static/*", echo.WrapHandler(http.StripPrefix(Path+"/static/", http.FileServer(http.FS(static)))))

	limit := middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: c.cfg.SignInRate, Burst: c.cfg.SignInBurst, ExpiresIn: 10 * time.Minute}),
		IdentifierExtractor: func(ctx echo.Context) (string, error) { return c.client(ctx.Request()), nil },
		DenyHandler: func(ctx echo.Context, _ string, _ error) error {
			ctx.Response().Header().Set("Retry-After", "60")
			return c.signInPage(ctx, http.StatusTooManyRequests, "Too many sign-in attempts from here. Wait a minute, then try again.")
		},
	})
	g.GET("/login", func(ctx echo.Context) error { return c.signInPage(ctx, http.StatusOK, "") })
	g.GET("/login/link/:token", c.linkPage, limit)
	g.POST("/login/link", c.consumeLink, limit)
	g.GET("/login/oidc", c.oidcStart, limit)
	g.GET("/login/oidc/callback", c.oidcCallback, limit)

	in := g.Group("", c.requireSession)
	in.POST("/logout", c.logout)
	c.routes(in)
	// After every route: a path the console does not serve is its own page (with its headers),
	// not the router's JSON answer.
	in.RouteNotFound("/*", c.noSuchPage)
}

// noSuchPage answers a console path that is no page (or a method the page does not take).
func (c *Console) noSuchPage(ctx echo.Context) error {
	return c.render(ctx, http.StatusNotFound, "error", page{Title: "Not found",
		Error: "There is no such page in the console. Start again from your projects."})
}

// securityHeaders keeps the pages out of frames and other origins' scripts, and out of caches.
func (c *Console) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ctx echo.Context) error {
		h := ctx.Response().Header()
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		if !strings.HasPrefix(ctx.Request().URL.Path, Path+"/static/") {
			h.Set("Cache-Control", "no-store")
		}
		return next(ctx)
	}
}

// LogSafeURI is a request URI as a log may keep it: a sign-in link's token and an OpenID
// Connect callback's code and state are replaced by "REDACTED", since either signs a person in.
func LogSafeURI(uri string) string {
	const link = Path + "/login/link/"
	if i := strings.Index(uri, link); i >= 0 {
		rest := uri[i+len(link):]
		end := strings.IndexAny(rest, "?#")
		if end < 0 {
			end = len(rest)
		}
		uri = uri[:i+len(link)] + "REDACTED" + rest[end:]
	}
	if strings.HasPrefix(uri, Path+"/login/oidc/callback?") {
		uri = Path + "/login/oidc/callback?REDACTED"
	}
	return uri
}
