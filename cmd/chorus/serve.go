package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/console"
	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/stream"
	"github.com/chorus-dev/chorus/workflows"
)

// Roles of a chorus server process.
const (
	roleAPI    = "api"
	roleWorker = "worker"
	roleAll    = "all"
)

// serverConfig is what runServer needs.
type serverConfig struct {
	role string
	addr string
	// temporal is how to reach Temporal (address, namespace, TLS, API key, payload keys).
	temporal temporalConfig
	// edge is what the HTTP server admits: Host and Origin allow-lists, limits, /metrics.
	edge edgeConfig
	// taskQueue is the Temporal task queue of Chorus's workflows and activities: every API and
	// worker of one deployment must use the same one, and two deployments on one namespace
	// different ones.
	taskQueue string
	// temporalWait bounds how long to wait for Temporal to answer at start.
	temporalWait time.Duration
	// pprofAddr, when set, serves net/http/pprof on its own listener (never on addr).
	pprofAddr string
	// retention and pruneInterval configure the pruning a worker runs (zero: the defaults;
	// pruningFromEnv).
	retention     store.Retention
	pruneInterval time.Duration
	// soak: the bench's soak phase, whose journal window may be below the namespace's retention
	// (activities.Activities.NoNamespaceFloor).
	soak bool
	// tracerProvider receives the spans of tool calls, Temporal and SQL; nil takes it from the
	// OTEL_* environment (tracingFromEnv), where tracing is off unless asked for.
	tracerProvider oteltrace.TracerProvider
	// deployment, when its name and build id are set, makes the worker a version of a Temporal
	// Worker Deployment (docs/production.md "Rolling deploys").
	deployment workerDeployment
	// console is how the web console under /console is served.
	console consoleConfig
	// events is how GET /api/events keeps its streams.
	events eventsConfig
	// webhooks is where webhooks may be sent and how deliveries retry.
	webhooks webhooksConfig
}

func newServeCmd(g *globals) *cobra.Command {
	cfg := serverConfig{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run Chorus against an external Temporal and PostgreSQL (production)",
		Long: `Run the Chorus API (the MCP endpoint), the Temporal worker, or both.

On the first start, CHORUS_BOOTSTRAP_ADMIN_KEY=cho_... (at least 43 characters after cho_) creates
the company, its owner (CHORUS_OWNER_EMAIL) and an admin agent holding that key; without it,
create agents with "chorus agent create".

Configuration comes from the environment: CHORUS_DATABASE_URL (postgres://...; the schema must be
migrated with "chorus migrate up"), TEMPORAL_ADDRESS (host:port of the Temporal frontend) and
TEMPORAL_NAMESPACE, with TLS, mTLS or an API key for Temporal as the temporal CLI reads them
(TEMPORAL_TLS*, TEMPORAL_API_KEY) and payload encryption keys (CHORUS_PAYLOAD_KEYS). API and
worker processes scale independently; any API instance serves any request.

It listens on 127.0.0.1:8637 unless --addr says otherwise: put a TLS-terminating proxy in front
of it (docs/security.md), and name the proxy's host with --allowed-hosts. ` + tracingHelp + ` (docs/operations.md "Tracing").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch cfg.role {
			case roleAPI, roleWorker, roleAll:
			default:
				return fmt.Errorf("--role must be api, worker or all, not %q", cfg.role)
			}
			if err := cfg.deployment.validate(cfg.role); err != nil {
				return err
			}
			if cfg.temporal.address == "" {
				return errors.New("TEMPORAL_ADDRESS is not set: chorus serve connects to an external Temporal " +
					"server (use chorus dev to run one locally)")
			}
			log := newLogger()
			ctx := cmd.Context()
			st, err := g.openStore(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			log.Info("store ready", "database", store.DescribeURL(g.databaseURL()))
			if key := os.Getenv("CHORUS_BOOTSTRAP_ADMIN_KEY"); key != "" && cfg.role != roleWorker {
				// Production first start (compose, scripts): the operator chose the admin key, so it
				// is never printed. Later starts find the company and change nothing.
				boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Default Company", OwnerName: "Owner",
					OwnerEmail: envOr("CHORUS_OWNER_EMAIL", "owner@localhost"), AgentName: "Admin Agent", Key: key})
				if err != nil {
					return fmt.Errorf("first-start setup with CHORUS_BOOTSTRAP_ADMIN_KEY: %w", err)
				}
				if boot.Created {
					log.Info("created the company, its owner and the admin agent with CHORUS_BOOTSTRAP_ADMIN_KEY",
						"agent", boot.Agent.UUID)
				}
			}
			return runServer(ctx, log, st, cfg, nil)
		},
	}
	cmd.Flags().StringVar(&cfg.role, "role", envOr("CHORUS_ROLE", roleAll), "what this process runs: api, worker or all (env CHORUS_ROLE)")
	cmd.Flags().StringVar(&cfg.addr, "addr", envOr("CHORUS_ADDR", "127.0.0.1:8637"), "HTTP listen address; loopback unless "+
		"you say otherwise, e.g. 0.0.0.0:8637 behind a TLS proxy (env CHORUS_ADDR)")
	cmd.Flags().StringVar(&cfg.pprofAddr, "pprof-addr", envOr("CHORUS_PPROF_ADDR", ""), pprofFlagHelp)
	cmd.Flags().StringVar(&cfg.taskQueue, "task-queue", envOr("CHORUS_TASK_QUEUE", workflows.TaskQueue), taskQueueFlagHelp)
	cmd.Flags().StringVar(&cfg.deployment.name, "deployment-name", envOr("CHORUS_WORKER_DEPLOYMENT", ""),
		"run the worker as a version of this Temporal Worker Deployment, for rolling deploys (with --build-id; "+
			"env CHORUS_WORKER_DEPLOYMENT; docs/production.md \"Rolling deploys\")")
	cmd.Flags().StringVar(&cfg.deployment.buildID, "build-id", envOr("CHORUS_BUILD_ID", ""),
		"this worker's version in --deployment-name, e.g. the image tag (env CHORUS_BUILD_ID)")
	cfg.temporal.flags(cmd, false, "")
	cfg.edge.flags(cmd)
	cfg.console.flags(cmd)
	cfg.events.flags(cmd)
	cfg.webhooks.flags(cmd)
	cfg.temporalWait = 2 * time.Minute
	cmd.PreRunE = func(*cobra.Command, []string) (err error) {
		cfg.retention, cfg.pruneInterval, err = pruningFromEnv()
		return err
	}
	return cmd
}

// runServer connects to Temporal, runs the worker and/or the HTTP API per cfg.role, and blocks
// until ctx is cancelled; then it stops the API, then the worker, and returns. ready, when not
// nil, is called once everything is serving.
func runServer(ctx context.Context, log *slog.Logger, st *store.Store, cfg serverConfig, ready func()) error {
	metrics, err := newProcessMetrics(log, st.DB.DB, st.Dialect())
	if err != nil {
		return err
	}
	if err := cmp.Or(cfg.edge.checkLimits(), cfg.webhooks.parse()); err != nil {
		return err
	}
	tr, err := serverTracing(ctx, log, st, cfg)
	if err != nil {
		return err
	}
	if tr != nil {
		defer flushTracing(ctx, log, tr)
	}
	tc, err := connectServerTemporal(ctx, log, st, cfg, metrics, tr)
	if err != nil {
		return err
	}
	defer tc.Close()
	seal := cfg.temporal.sealsPayloads()
	if cfg.pprofAddr != "" {
		stop, err := servePprof(log, cfg.pprofAddr, cfg.edge, metrics.tools)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := prepareWorkerNamespace(ctx, log, tc, cfg); err != nil {
		return err
	}

	// A worker that stops on a fatal error (its namespace deleted, its credentials refused) makes
	// the process unready, then ends it with an error, so a supervisor restarts it.
	health := &workerHealth{role: cfg.role}
	fatal := make(chan error, 1)
	w, err := startServerWorker(log, st, tc, cfg, seal, health, fatal)
	if err != nil {
		return err
	}
	// One hub a process tails the events table for its event streams (docs/rules.md §7.4).
	hub := st.NewEventHub(log)
	go hub.Run(ctx)
	metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chorus_event_subscribers",
		Help: "Readers of the event stream open in this process: GET /api/events streams, console pages following a " +
			"project, and the webhook dispatcher of a worker."}, func() float64 { return float64(hub.Subscribers()) }))
	defer startWebhookDispatcher(ctx, log, st, tc, hub, cfg, w != nil)()
	e, err := newServerEcho(log, st, tc, cfg, metrics, tr, health, seal, hub)
	if err != nil {
		return err
	}
	if cfg.edge.metricsAddr != "" {
		stop, err := serveMetrics(log, cfg.edge.metricsAddr, cfg.edge, metrics.tools, cfg.edge.guardMetrics(metrics.handler()))
		if err != nil {
			if w != nil {
				w.Stop()
			}
			return err
		}
		defer stop()
	} else if !cfg.edge.metricsOnMain(cfg.addr) {
		log.Warn("GET /metrics is not served: --addr is not a loopback address; serve it on an address of its own "+
			"(--metrics-addr) or behind a token (CHORUS_METRICS_TOKEN)", "addr", cfg.addr)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		if w != nil {
			w.Stop()
		}
		return fmt.Errorf("listen on %s: %w (is another chorus running? choose another with --addr)", cfg.addr, err)
	}
	e.Listener = ln
	serveErr := make(chan error, 1)
	go func() { serveErr <- e.Start("") }()
	log.Info("http listening", "addr", ln.Addr().String(), "role", cfg.role)
	if ready != nil {
		ready()
	}

	select {
	case <-ctx.Done():
	case ferr := <-fatal:
		err = fmt.Errorf("the Temporal worker stopped: %w", ferr)
	case err = <-serveErr:
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if serr := e.Shutdown(shutCtx); serr != nil {
		log.Warn("http shutdown", "err", serr)
	}
	if w != nil {
		w.Stop()
	}
	return err
}

// serverTracing is the server's tracing: cfg's provider (tests) or the environment's; nil when
// tracing is off. When on, it traces SQL too.
func serverTracing(ctx context.Context, log *slog.Logger, st *store.Store, cfg serverConfig) (*tracing, error) {
	tr, err := newTracing(cfg.tracerProvider, nil)
	if cfg.tracerProvider == nil {
		tr, err = tracingFromEnv(ctx, cfg.role)
	}
	if err != nil || tr == nil {
		return tr, err
	}
	tr.traceSQL(st)
	log.Info("tracing on: tool calls, Temporal and SQL (OpenTelemetry)")
	return tr, nil
}

// flushTracing sends the last spans on the way out.
func flushTracing(ctx context.Context, log *slog.Logger, tr *tracing) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := tr.shutdown(sctx); err != nil {
		log.Warn("tracing: flushing the last spans", "err", err)
	}
}

// connectServerTemporal dials Temporal and binds the database to it.
func connectServerTemporal(ctx context.Context, log *slog.Logger, st *store.Store, cfg serverConfig,
	metrics *processMetrics, tr *tracing) (client.Client, error) {
	tc, err := dialTemporalMetrics(ctx, log, cfg.temporal, cfg.temporalWait, metrics.temporal, tr.interceptors()...)
	if err != nil {
		return nil, err
	}
	log.Info("temporal connected", "to", cfg.temporal.describe(), "payloadEncryption", payloadEncryption(cfg.temporal))
	// The database belongs to one Temporal: the first start records it, and a later one refuses
	// another deployment's (ops.BindCluster).
	bindCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = ops.BindCluster(bindCtx, st, tc, cfg.temporal.namespace, cfg.temporal.address)
	cancel()
	if err != nil {
		tc.Close()
		return nil, err
	}
	return tc, nil
}

// startServerWorker starts the Temporal worker, unless cfg.role is the API alone (then it
// returns nil). A fatal error of the worker goes to health and to fatal.
func startServerWorker(log *slog.Logger, st *store.Store, tc client.Client, cfg serverConfig, seal bool,
	health *workerHealth, fatal chan<- error) (worker.Worker, error) {
	if cfg.role == roleAPI {
		return nil, nil
	}
	acts := activities.New(st, tc)
	acts.Retention, acts.NoNamespaceFloor, acts.WebhookPolicy = cfg.retention, cfg.soak, cfg.webhooks.policy
	if seal {
		acts.SealKeywords = workflows.SealKeywords
	}
	w := workflows.NewWorker(tc, cfg.taskQueue, acts, worker.Options{WorkerStopTimeout: 10 * time.Second,
		DeploymentOptions: cfg.deployment.options(),
		OnFatalError: func(err error) {
			health.stopped(err)
			log.Error("the Temporal worker stopped on a fatal error; exiting", "err", err)
			select {
			case fatal <- err:
			default:
			}
		}})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	log.Info("worker started", "taskQueue", cfg.taskQueue, "namespace", cfg.temporal.namespace)
	return w, nil
}

// newServerEcho is the HTTP server: health and readiness, metrics on the main address when
// allowed, and the MCP endpoint (or, for a worker alone, the endpoint's Host check).
func newServerEcho(log *slog.Logger, st *store.Store, tc client.Client, cfg serverConfig, metrics *processMetrics,
	tr *tracing, health *workerHealth, seal bool, hub *store.EventHub) (*echo.Echo, error) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// A client gets 10 s to send its headers and a minute for a whole request (bodies are at most
	// mcp.MaxRequestBytes), so idle or trickling connections cannot pile up.
	e.Server.ReadHeaderTimeout = 10 * time.Second
	e.Server.ReadTimeout = time.Minute
	e.Server.IdleTimeout = 2 * time.Minute
	// The MCP endpoint bounds its own bodies (mcp.MaxRequestBytes) and answers in JSON-RPC.
	e.Use(middleware.Recover(), middleware.RequestID(), requestLogger(log))
	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", readyz(log, st, tc, cfg.temporal.namespace, health))
	if cfg.edge.metricsOnMain(cfg.addr) {
		e.GET("/metrics", echo.WrapHandler(cfg.edge.guardMetrics(metrics.handler())))
	}
	if cfg.role == roleWorker {
		mcp.GuardHost(e, cfg.edge.edgeOptions(cfg.addr), metrics.tools)
		return e, nil
	}
	// The endpoint's Host check covers every path of the server (mcp.EdgeOptions).
	flows := workflows.NewClient(tc, cfg.taskQueue, st)
	flows.SealText = seal
	ep, err := mcp.NewEndpoint(&mcp.Deps{Store: st, Flows: flows, Log: log,
		Metrics: metrics.tools, Tracer: tr.tracer(), Limits: cfg.edge.limits, Edge: cfg.edge.edgeOptions(cfg.addr)}, version)
	if err != nil {
		return nil, err
	}
	ep.Mount(e)
	a := &app.App{Store: st, Flows: flows, Log: log, Events: hub, WebhookPolicy: cfg.webhooks.policy}
	con, err := mountConsole(e, a, log, cfg.console)
	if err != nil {
		return nil, err
	}
	events := stream.New(stream.Config{App: a, Log: log, Key: ep.KeyPrincipal, Session: con.SessionPrincipal,
		Heartbeat: cfg.events.heartbeat, Recheck: cfg.events.recheck})
	events.Mount(e)
	events.MountSession(e, console.EventsPath)
	return e, nil
}

const taskQueueFlagHelp = "Temporal task queue of Chorus's workflows and activities; the same for every process of one " +
	"deployment, different for deployments that share a namespace (env CHORUS_TASK_QUEUE)"

const pprofFlagHelp = "serve Go profiles (net/http/pprof, /debug/pprof/) on this address, e.g. 127.0.0.1:6060; " +
	"off when empty; keep it off public interfaces (env CHORUS_PPROF_ADDR)"

// servePprof serves the runtime profiles on a listener of their own, so they are never reachable
// through the API's address, behind the same Host allow-list as serveMetrics. stop closes it.
func servePprof(log *slog.Logger, addr string, edge edgeConfig, m *mcp.Metrics) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mcp.GuardHostHandler(edge.edgeOptions(addr), m, mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("pprof listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

// serveMetrics serves /metrics on a listener of its own (--metrics-addr), behind the Host
// allow-list the main address has (edge.edgeOptions of addr: loopback names on a loopback
// address), so a page rebinding its name to it reads nothing. stop closes it.
func serveMetrics(log *slog.Logger, addr string, edge edgeConfig, m *mcp.Metrics, h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", mcp.GuardHostHandler(edge.edgeOptions(addr), m, h))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("metrics listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

// payloadEncryption says, for the log, whether payloads are encrypted and with which key.
func payloadEncryption(c temporalConfig) string {
	keys, err := c.payloadKeys()
	if err != nil || keys == nil {
		return "off"
	}
	if keys.Active() == workflows.NoEncryption {
		return "off (opens payloads sealed with " + strings.Join(keys.IDs(), ", ") + ")"
	}
	return "on (key " + keys.Active() + ")"
}

// sealsPayloads says whether new payloads are encrypted: then new workflows keep their titles
// and assignees' names out of the search attributes (workflows.SealedTitle).
func (c temporalConfig) sealsPayloads() bool {
	keys, err := c.payloadKeys()
	return err == nil && keys != nil && keys.Active() != workflows.NoEncryption
}

// workerHealth is the state of this process's worker that /readyz reports: none (api role),
// running, or stopped on a fatal error.
type workerHealth struct {
	role string
	err  atomic.Pointer[error]
}

func (h *workerHealth) stopped(err error) { h.err.Store(&err) }

// status is "ok", "stopped", or "" when the process runs no worker. Why it stopped is in the
// process log (and the process ends), never in /readyz's answer.
func (h *workerHealth) status() string {
	if h.role == roleAPI {
		return ""
	}
	if p := h.err.Load(); p != nil {
		return "stopped (the process log says why)"
	}
	return "ok"
}

// readyz answers 200 when this process can do its work: the database answers, Temporal answers,
// the namespace exists with every Chorus search attribute registered (without them every create
// fails), and the worker, if the process runs one, has not stopped. Otherwise 503, with a body
// that names what is wrong ("problems") and, for a missing namespace or missing search
// attributes, the command that sets them up ("register": chorus temporal setup). The body never carries an error's own text (addresses, credentials, hosts a
// load balancer's caller has no business knowing): those go to the log, which it points to.
func readyz(log *slog.Logger, st *store.Store, tc client.Client, namespace string, w *workerHealth) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
		defer cancel()
		body := map[string]any{"store": "ok", "temporal": "ok", "namespace": "ok", "searchAttributes": "ok"}
		var problems []string
		if err := st.Ping(ctx); err != nil {
			log.Warn("readyz: the database does not answer", "err", err)
			body["store"] = "unreachable"
			problems = append(problems, "the database does not answer (the process log says why)")
		}
		if _, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			log.Warn("readyz: Temporal does not answer", "err", err)
			body["temporal"], body["namespace"], body["searchAttributes"] = "unreachable", "unknown", "unknown"
			problems = append(problems, "Temporal does not answer (the process log says why)")
		} else if _, err := tc.WorkflowService().DescribeNamespace(ctx,
			&workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err != nil {
			var nf *serviceerror.NamespaceNotFound
			if errors.As(err, &nf) {
				body["namespace"] = "missing"
				body["register"] = []string{workflows.SetupCommand(namespace)}
				problems = append(problems, fmt.Sprintf("the Temporal namespace %q does not exist: create it "+
					"(%s)", namespace, workflows.SetupCommand(namespace)))
			} else {
				log.Warn("readyz: the namespace cannot be read", "namespace", namespace, "err", err)
				body["namespace"] = "unknown"
				problems = append(problems, fmt.Sprintf("the Temporal namespace %q cannot be read (the process log says why)", namespace))
			}
			body["searchAttributes"] = "unknown"
		} else if missing, err := workflows.MissingSearchAttributes(ctx, tc, namespace); err != nil {
			log.Warn("readyz: the search attributes cannot be read", "namespace", namespace, "err", err)
			body["searchAttributes"] = "unknown"
			problems = append(problems, fmt.Sprintf("the search attributes of namespace %q cannot be read (the process log says why)", namespace))
		} else if len(missing) > 0 {
			body["searchAttributes"] = "missing: " + strings.Join(missing, ", ")
			body["register"] = []string{workflows.SetupCommand(namespace)}
			problems = append(problems, fmt.Sprintf("namespace %q lacks the search attributes %s: a worker registers "+
				"them at start, or run the command in \"register\"", namespace, strings.Join(missing, ", ")))
		}
		if ws := w.status(); ws != "" {
			body["worker"] = ws
			if ws != "ok" {
				problems = append(problems, "the Temporal worker "+ws)
			}
		}
		code := http.StatusOK
		body["status"] = "ready"
		if len(problems) > 0 {
			code = http.StatusServiceUnavailable
			body["status"], body["problems"] = "not ready", problems
		}
		return c.JSON(code, body)
	}
}

func requestLogger(log *slog.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true, LogRequestID: true, LogError: true,
		Skipper: func(c echo.Context) bool {
			return strings.HasPrefix(c.Path(), "/healthz") || strings.HasPrefix(c.Path(), "/metrics")
		},
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			lvl := slog.LevelDebug
			if v.Status >= 500 {
				lvl = slog.LevelError
			}
			log.Log(c.Request().Context(), lvl, "http", "method", v.Method, "uri", console.LogSafeURI(v.URI), "status", v.Status,
				"ms", v.Latency.Milliseconds(), "requestId", v.RequestID)
			return nil
		},
	})
}

// queueOrDefault is the task queue, workflows.TaskQueue when not set.
func queueOrDefault(q string) string { return cmp.Or(q, workflows.TaskQueue) }

// pruningFromEnv reads the pruning configuration (docs/production.md "Retry window and retention"):
// CHORUS_REQUEST_RETENTION, CHORUS_JOURNAL_RETENTION (durations such as 168h or 7d; unset: the
// defaults of store.DefaultRetention) and CHORUS_PRUNE_INTERVAL (unset: workflows.PruneInterval).
func pruningFromEnv() (store.Retention, time.Duration, error) {
	var r store.Retention
	var every time.Duration
	for _, v := range []struct {
		name string
		into *time.Duration
	}{{"CHORUS_REQUEST_RETENTION", &r.Requests}, {"CHORUS_JOURNAL_RETENTION", &r.Journal}, {"CHORUS_PRUNE_INTERVAL", &every}} {
		s := envOr(v.name, "")
		if s == "" {
			continue
		}
		d, err := parseWindow(s)
		if err != nil || d <= 0 {
			return r, 0, fmt.Errorf("%s=%q is not a positive duration (e.g. 168h, 7d, 5m)", v.name, s)
		}
		*v.into = d
	}
	return r, every, nil
}

// parseWindow is time.ParseDuration that also takes whole days ("7d").
func parseWindow(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
