package deploy

// Structural checks of the production Docker files at the repository root (docker-compose.yml,
// Dockerfile, deploy/). No Docker engine runs where these tests run, so instead of starting the
// stack they check that its parts agree with one another and with what `chorus serve` needs.
//
// The compose file is read the way `docker compose` reads it with no .env file: YAML anchors,
// aliases and merge keys resolved, then ${VAR:-default} interpolation applied with every variable
// unset (a ${VAR:?message} variable reads as a placeholder).

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const (
	composeRepoRoot = ".."
	composeFile     = "docker-compose.yml"
)

// The services the stack must have.
const (
	svcPostgres          = "postgres"
	svcTemporalSchema    = "temporal-schema"
	svcTemporal          = "temporal"
	svcTemporalNamespace = "temporal-namespace"
	svcTemporalUI        = "temporal-ui"
	svcChorusMigrate     = "chorus-migrate"
	svcChorusAPI         = "chorus-api"
	svcChorusWorker      = "chorus-worker"
)

var composeRequiredServices = []string{svcPostgres, svcTemporalSchema, svcTemporal, svcTemporalNamespace,
	svcTemporalUI, svcChorusMigrate, svcChorusAPI, svcChorusWorker}

// composeMonitoringServices scrape and chart the stack (deploy/prometheus.yml, deploy/grafana).
var composeMonitoringServices = []string{"prometheus", "grafana"}

// ---- compose model ----

type composeProject struct {
	Services map[string]*composeService `yaml:"services"`
	Volumes  map[string]any             `yaml:"volumes"`
}

type composeService struct {
	Image         string         `yaml:"image"`
	Build         *composeBuild  `yaml:"build"`
	ContainerName string         `yaml:"container_name"`
	Command       composeWords   `yaml:"command"`
	Entrypoint    composeWords   `yaml:"entrypoint"`
	Environment   composeEnv     `yaml:"environment"`
	EnvFile       any            `yaml:"env_file"`
	DependsOn     composeDeps    `yaml:"depends_on"`
	Ports         []composePort  `yaml:"ports"`
	Expose        composeScalars `yaml:"expose"`
	Volumes       []composeMount `yaml:"volumes"`
	Healthcheck   *struct {
		Test    composeWords `yaml:"test"`
		Disable bool         `yaml:"disable"`
	} `yaml:"healthcheck"`
}

// composeWords is a command line: compose takes a list or a string (split on spaces here).
type composeWords []string

func (w *composeWords) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*w = strings.Fields(n.Value)
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return err
	}
	*w = l
	return nil
}

// composeScalars is a list whose items may be numbers or strings.
type composeScalars []string

func (s *composeScalars) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: want a list", n.Line)
	}
	for _, c := range n.Content {
		*s = append(*s, c.Value)
	}
	return nil
}

// composeEnv is `environment:` in either of its forms (map, or list of NAME=value).
type composeEnv map[string]string

func (e *composeEnv) UnmarshalYAML(n *yaml.Node) error {
	out := composeEnv{}
	if n.Kind == yaml.SequenceNode {
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, kv := range l {
			k, v, _ := strings.Cut(kv, "=")
			out[k] = v
		}
	} else {
		var m map[string]any // Decode resolves `<<: *anchor` merge keys
		if err := n.Decode(&m); err != nil {
			return err
		}
		for k, v := range m {
			if v == nil {
				out[k] = ""
			} else {
				out[k] = fmt.Sprint(v)
			}
		}
	}
	*e = out
	return nil
}

// composeDeps maps each dependency to its condition (a plain list means service_started).
type composeDeps map[string]string

func (d *composeDeps) UnmarshalYAML(n *yaml.Node) error {
	out := composeDeps{}
	if n.Kind == yaml.SequenceNode {
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, s := range l {
			out[s] = "service_started"
		}
	} else {
		var m map[string]struct {
			Condition string `yaml:"condition"`
		}
		if err := n.Decode(&m); err != nil {
			return err
		}
		for s, c := range m {
			out[s] = c.Condition
			if c.Condition == "" {
				out[s] = "service_started"
			}
		}
	}
	*d = out
	return nil
}

type composePort struct {
	HostIP, Published, Target string
}

func (p *composePort) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var long struct {
			Target    string `yaml:"target"`
			Published string `yaml:"published"`
			HostIP    string `yaml:"host_ip"`
		}
		if err := n.Decode(&long); err != nil {
			return err
		}
		*p = composePort{HostIP: long.HostIP, Published: long.Published, Target: long.Target}
		return nil
	}
	spec, _, _ := strings.Cut(n.Value, "/") // drop /tcp
	parts := strings.Split(spec, ":")
	switch len(parts) {
	case 1:
		*p = composePort{Target: parts[0]}
	case 2:
		*p = composePort{Published: parts[0], Target: parts[1]}
	case 3:
		*p = composePort{HostIP: parts[0], Published: parts[1], Target: parts[2]}
	default:
		return fmt.Errorf("line %d: cannot read port %q", n.Line, n.Value)
	}
	return nil
}

type composeMount struct {
	Type, Source, Target string
}

func (m *composeMount) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var long struct {
			Type   string `yaml:"type"`
			Source string `yaml:"source"`
			Target string `yaml:"target"`
		}
		if err := n.Decode(&long); err != nil {
			return err
		}
		*m = composeMount(long)
		return nil
	}
	parts := strings.Split(n.Value, ":")
	if len(parts) == 1 {
		*m = composeMount{Type: "volume", Target: parts[0]}
		return nil
	}
	*m = composeMount{Source: parts[0], Target: parts[1], Type: "volume"}
	if strings.HasPrefix(parts[0], ".") || strings.HasPrefix(parts[0], "/") || strings.HasPrefix(parts[0], "~") {
		m.Type = "bind"
	}
	return nil
}

type composeBuild struct {
	Context, Dockerfile string
}

func (b *composeBuild) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*b = composeBuild{Context: n.Value}
		return nil
	}
	var long struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	}
	if err := n.Decode(&long); err != nil {
		return err
	}
	*b = composeBuild(long)
	return nil
}

// ---- loading and interpolation ----

type loadedCompose struct {
	composeProject
	// raw is the services' environment before interpolation, to see what a value is made of.
	raw struct {
		Services map[string]struct {
			Environment composeEnv `yaml:"environment"`
		} `yaml:"services"`
	}
	// required lists the ${VAR:?...} variables.
	required []string
}

func loadCompose(t *testing.T) *loadedCompose {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(composeRepoRoot, composeFile))
	require.NoError(t, err, "read %s at the repository root", composeFile)

	var lc loadedCompose
	var rawNode, node yaml.Node
	require.NoError(t, yaml.Unmarshal(data, &rawNode), "%s is not valid YAML", composeFile)
	require.NoError(t, rawNode.Decode(&lc.raw), "%s: cannot read its services (before interpolation)", composeFile)
	require.NoError(t, yaml.Unmarshal(data, &node))
	required := map[string]bool{}
	require.NoError(t, composeInterpolateNode(&node, required), "%s: interpolation", composeFile)
	require.NoError(t, node.Decode(&lc.composeProject), "%s: cannot read its services", composeFile)
	for v := range required {
		lc.required = append(lc.required, v)
	}
	slices.Sort(lc.required)
	require.NotEmpty(t, lc.Services, "%s has no services", composeFile)
	return &lc
}

func (lc *loadedCompose) service(t *testing.T, name string) *composeService {
	t.Helper()
	s, ok := lc.Services[name]
	require.True(t, ok && s != nil, "%s has no service %q", composeFile, name)
	return s
}

// composeInterpolateNode applies interpolation to every scalar value (not to mapping keys), as
// compose does. Alias nodes are skipped: the anchored node they share is interpolated where it
// is defined.
func composeInterpolateNode(n *yaml.Node, required map[string]bool) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := composeInterpolateNode(c, required); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if err := composeInterpolateNode(n.Content[i], required); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		v, err := composeInterpolate(n.Value, required)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		n.Value = v
	}
	return nil
}

var composeVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

// composeInterpolate expands $$, $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?msg},
// ${VAR?msg}, ${VAR:+alt} and ${VAR+alt} with every variable unset. A required variable becomes
// "<required:NAME>" and is recorded.
func composeInterpolate(s string, required map[string]bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i += 2
		case next == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", s)
			}
			expr := s[i+2 : i+end]
			if strings.Contains(expr, "${") {
				return "", fmt.Errorf("nested interpolation in %q is not supported by this test", s)
			}
			name := composeVarName.FindString(expr)
			if name == "" {
				return "", fmt.Errorf("bad variable in %q", s)
			}
			op, arg := expr[len(name):], ""
			for _, o := range []string{":-", ":?", ":+", "-", "?", "+"} {
				if strings.HasPrefix(op, o) {
					op, arg = o, op[len(o):]
					break
				}
			}
			switch op {
			case "", "+", ":+": // unset: empty
			case "-", ":-":
				b.WriteString(arg)
			case "?", ":?":
				required[name] = true
				b.WriteString("<required:" + name + ">")
			default:
				return "", fmt.Errorf("unknown interpolation %q in %q", expr, s)
			}
			i += end + 1
		default:
			name := composeVarName.FindString(s[i+1:])
			if name == "" {
				b.WriteByte('$')
				i++
				continue
			}
			i += 1 + len(name) // unset: empty
		}
	}
	return b.String(), nil
}

// ---- helpers ----

// role is what `--role` in the command, or else CHORUS_ROLE, makes of a chorus serve service.
func (s *composeService) role(t *testing.T, name string) string {
	t.Helper()
	require.NotEmpty(t, s.Command, "service %s has no command; it must run `serve --role ...`", name)
	require.Equal(t, "serve", s.Command[0], "service %s must run `chorus serve`, its command is %q", name, s.Command)
	flag := ""
	for i, a := range s.Command {
		if v, ok := strings.CutPrefix(a, "--role="); ok {
			flag = v
		} else if a == "--role" && i+1 < len(s.Command) {
			flag = s.Command[i+1]
		}
	}
	env := s.Environment["CHORUS_ROLE"]
	if flag != "" && env != "" {
		require.Equal(t, flag, env, "service %s: --role %s in its command contradicts CHORUS_ROLE=%s", name, flag, env)
	}
	if flag != "" {
		return flag
	}
	return env
}

func composeHostPort(t *testing.T, what, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err, "%s %q is not host:port", what, addr)
	n, err := strconv.Atoi(p)
	require.NoError(t, err, "%s %q has a non-numeric port", what, addr)
	return h, n
}

// containerPorts are the ports a service declares in ports (container side) and expose.
func (s *composeService) containerPorts() []string {
	var out []string
	for _, p := range s.Ports {
		out = append(out, p.Target)
	}
	for _, e := range s.Expose {
		e, _, _ = strings.Cut(e, "/")
		out = append(out, e)
	}
	return out
}

// composeImageRef splits an image reference into repository, tag and digest.
func composeImageRef(ref string) (repo, tag, digest string) {
	repo, digest, _ = strings.Cut(ref, "@")
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo, tag = repo[:i], repo[i+1:]
	}
	return repo, tag, digest
}

// mountedScript returns the host file (relative to the repository) bind-mounted at a container
// path that the service's entrypoint or command mentions.
func (s *composeService) mountedScript(t *testing.T, name string) (hostPath string) {
	t.Helper()
	run := strings.Join(append(slices.Clone(s.Entrypoint), s.Command...), " ")
	for _, m := range s.Volumes {
		if m.Type == "bind" && strings.Contains(run, m.Target) {
			return m.Source
		}
	}
	require.Failf(t, "no script", "service %s runs %q, which names no file bind-mounted into it", name, run)
	return ""
}

func composeReadFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(composeRepoRoot, filepath.FromSlash(rel)))
	require.NoError(t, err, "read %s", rel)
	return string(b)
}

// ---- tests ----

func TestComposeHasEveryService(t *testing.T) {
	lc := loadCompose(t)
	for _, name := range composeRequiredServices {
		lc.service(t, name)
	}
	for name, s := range lc.Services {
		repo, _, _ := composeImageRef(s.Image)
		require.NotEqual(t, "temporalio/auto-setup", strings.TrimPrefix(repo, "docker.io/"),
			"service %s uses the deprecated temporalio/auto-setup image; use temporalio/server with the temporal-schema job", name)
		require.Nil(t, s.EnvFile, "service %s uses env_file, whose variables this test cannot see; put them in environment", name)
	}
}

func TestComposeImagesHaveExplicitTags(t *testing.T) {
	lc := loadCompose(t)
	for name, s := range lc.Services {
		if s.Image == "" {
			require.NotNil(t, s.Build, "service %s has neither image nor build", name)
			continue
		}
		repo, tag, digest := composeImageRef(s.Image)
		require.True(t, digest != "" || (tag != "" && tag != "latest"),
			"service %s: image %q has no explicit tag (it would mean :latest); pin a version", name, s.Image)
		require.NotContains(t, tag, "<required:", "service %s: the image tag of %q comes from a required variable", name, repo)
	}

	// The schema job must be from the same Temporal release as the server, or it prepares a
	// schema version that server does not expect.
	_, serverTag, _ := composeImageRef(lc.service(t, svcTemporal).Image)
	require.Regexp(t, `^1\.32\.\d+$`, serverTag, "temporal: the temporalio/server image must be pinned to a 1.32.x release")
	repo, tag, _ := composeImageRef(lc.service(t, svcTemporalSchema).Image)
	require.Equal(t, "temporalio/admin-tools", repo, "service %s must use the temporalio/admin-tools image", svcTemporalSchema)
	require.True(t, tag == serverTag || strings.HasPrefix(tag, serverTag+"-"),
		"service %s uses admin-tools %s but the server is %s: the schema tools must match the server release", svcTemporalSchema, tag, serverTag)
	repo, uiTag, _ := composeImageRef(lc.service(t, svcTemporalUI).Image)
	require.Equal(t, "temporalio/ui", repo, "temporal-ui must run the temporalio/ui image")
	require.True(t, strings.HasPrefix(uiTag, "2."), "temporal-ui: want a 2.x temporalio/ui tag, got %q", uiTag)
	repo, _, _ = composeImageRef(lc.service(t, svcPostgres).Image)
	require.Equal(t, "postgres", repo, "the postgres service must run the official postgres image")
}

func TestComposeChorusServicesAgree(t *testing.T) {
	lc := loadCompose(t)
	api, worker, migrate := lc.service(t, svcChorusAPI), lc.service(t, svcChorusWorker), lc.service(t, svcChorusMigrate)
	namespace := lc.service(t, svcTemporalNamespace)

	require.Equal(t, "api", api.role(t, svcChorusAPI), "chorus-api must run `serve --role api`")
	require.Equal(t, "worker", worker.role(t, svcChorusWorker), "chorus-worker must run `serve --role worker`")
	require.Equal(t, []string{"migrate", "up"}, []string(migrate.Command), "chorus-migrate must run `chorus migrate up`")
	require.Equal(t, []string{"temporal", "setup"}, []string(namespace.Command), "temporal-namespace must run `chorus temporal setup`")

	// All four run the image built from the Dockerfile at the repository root.
	for name, s := range map[string]*composeService{svcChorusAPI: api, svcChorusWorker: worker, svcChorusMigrate: migrate,
		svcTemporalNamespace: namespace} {
		require.NotNil(t, s.Build, "service %s must build the Chorus image (build: .)", name)
		require.Equal(t, ".", path.Clean(s.Build.Context), "service %s builds from %q, not the repository root", name, s.Build.Context)
		require.Equal(t, api.Image, s.Image, "service %s runs image %q but chorus-api runs %q", name, s.Image, api.Image)
	}

	dbURL := api.Environment["CHORUS_DATABASE_URL"]
	temporalAddr := api.Environment["TEMPORAL_ADDRESS"]
	require.NotEmpty(t, dbURL, "chorus-api has no CHORUS_DATABASE_URL")
	require.NotEmpty(t, temporalAddr, "chorus-api has no TEMPORAL_ADDRESS (required by chorus serve)")
	for _, v := range []string{"CHORUS_DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"} {
		require.Equal(t, api.Environment[v], worker.Environment[v],
			"chorus-api and chorus-worker disagree on %s: they must share one database and one Temporal namespace", v)
	}
	require.Equal(t, dbURL, migrate.Environment["CHORUS_DATABASE_URL"],
		"chorus-migrate migrates a different database than chorus-api uses")

	// The API publishes the port it listens on, and its health check asks that port.
	listen := api.Environment["CHORUS_ADDR"]
	if listen == "" {
		listen = "127.0.0.1:8637"
	}
	_, listenPort := composeHostPort(t, "chorus-api CHORUS_ADDR", listen)
	published := false
	for _, p := range api.Ports {
		if p.Target == strconv.Itoa(listenPort) {
			published = true
		}
	}
	require.True(t, published, "chorus-api listens on %d (CHORUS_ADDR) but publishes %v", listenPort, api.Ports)
	for name, s := range map[string]*composeService{svcChorusAPI: api, svcChorusWorker: worker} {
		if s.Healthcheck == nil || s.Healthcheck.Disable {
			continue
		}
		check := strings.Join(s.Healthcheck.Test, " ")
		require.Contains(t, check, ":"+strconv.Itoa(listenPort)+"/",
			"service %s health-checks %q, not the port chorus listens on (%d)", name, check, listenPort)
	}

	// The admin key comes from the user's environment: no key is written in this public file,
	// neither as the value nor as a ${...:-default}.
	if rawKey, ok := lc.raw.Services[svcChorusAPI].Environment["CHORUS_BOOTSTRAP_ADMIN_KEY"]; ok {
		require.True(t, strings.HasPrefix(rawKey, "${CHORUS_BOOTSTRAP_ADMIN_KEY") && strings.HasSuffix(rawKey, "}") &&
			strings.Count(rawKey, "${") == 1,
			"chorus-api: CHORUS_BOOTSTRAP_ADMIN_KEY is %q; it must be exactly ${CHORUS_BOOTSTRAP_ADMIN_KEY...}, "+
				"taken from the user's environment or .env", rawKey)
		key := api.Environment["CHORUS_BOOTSTRAP_ADMIN_KEY"]
		require.False(t, strings.HasPrefix(key, "cho_"),
			"chorus-api: with CHORUS_BOOTSTRAP_ADMIN_KEY unset the stack would use the admin key %q written in %s; "+
				"anyone reading it could act as admin", key, composeFile)
	}
	for _, name := range []string{svcChorusWorker, svcChorusMigrate} {
		_, ok := lc.raw.Services[name].Environment["CHORUS_BOOTSTRAP_ADMIN_KEY"]
		require.False(t, ok, "%s gets CHORUS_BOOTSTRAP_ADMIN_KEY, which only an API process uses; keep the secret in chorus-api", name)
	}
}

func TestComposeDatabaseWiring(t *testing.T) {
	lc := loadCompose(t)
	api, pg := lc.service(t, svcChorusAPI), lc.service(t, svcPostgres)

	u, err := url.Parse(api.Environment["CHORUS_DATABASE_URL"])
	require.NoError(t, err, "CHORUS_DATABASE_URL is not a URL")
	require.Contains(t, []string{"postgres", "postgresql"}, u.Scheme,
		"CHORUS_DATABASE_URL must be a postgres:// URL, got scheme %q", u.Scheme)
	require.Equal(t, svcPostgres, u.Hostname(),
		"CHORUS_DATABASE_URL points at host %q, not at the %s service", u.Hostname(), svcPostgres)
	if u.Port() != "" {
		require.Equal(t, "5432", u.Port(), "CHORUS_DATABASE_URL uses port %s; PostgreSQL listens on 5432 in its container", u.Port())
	}
	chorusDB := strings.TrimPrefix(u.Path, "/")
	require.Equal(t, "chorus", chorusDB, "CHORUS_DATABASE_URL names database %q, want chorus", chorusDB)
	pw, _ := u.User.Password()
	require.Equal(t, pg.Environment["POSTGRES_USER"], u.User.Username(),
		"CHORUS_DATABASE_URL's user differs from the postgres service's POSTGRES_USER")
	require.Equal(t, pg.Environment["POSTGRES_PASSWORD"], pw,
		"CHORUS_DATABASE_URL's password differs from the postgres service's POSTGRES_PASSWORD")

	// Temporal's server and its schema job use the same databases, on the same server, as the
	// same user.
	server, schema := lc.service(t, svcTemporal), lc.service(t, svcTemporalSchema)
	for _, v := range []string{"DB", "DB_PORT", "POSTGRES_SEEDS", "POSTGRES_USER", "POSTGRES_PWD", "DBNAME", "VISIBILITY_DBNAME"} {
		require.Equal(t, server.Environment[v], schema.Environment[v],
			"temporal-schema prepares %s=%q but the temporal server uses %s=%q", v, schema.Environment[v], v, server.Environment[v])
	}
	require.Equal(t, "postgres12", server.Environment["DB"], "temporal: DB must be postgres12")
	require.Equal(t, svcPostgres, server.Environment["POSTGRES_SEEDS"],
		"temporal: POSTGRES_SEEDS must be the %s service", svcPostgres)
	require.Equal(t, pg.Environment["POSTGRES_USER"], server.Environment["POSTGRES_USER"],
		"temporal's POSTGRES_USER differs from the postgres service's")
	require.Equal(t, pg.Environment["POSTGRES_PASSWORD"], server.Environment["POSTGRES_PWD"],
		"temporal's POSTGRES_PWD differs from the postgres service's POSTGRES_PASSWORD")
	temporalDB, visibilityDB := server.Environment["DBNAME"], server.Environment["VISIBILITY_DBNAME"]
	require.NotEmpty(t, temporalDB, "temporal: set DBNAME explicitly")
	require.NotEmpty(t, visibilityDB, "temporal: set VISIBILITY_DBNAME explicitly")
	require.NotEqual(t, temporalDB, visibilityDB, "Temporal's persistence and visibility databases must differ")
	require.NotContains(t, []string{temporalDB, visibilityDB}, chorusDB, "Chorus and Temporal must not share a database")

	// PostgreSQL creates every database the stack uses, through POSTGRES_DB or an init script.
	created := map[string]bool{pg.Environment["POSTGRES_DB"]: true}
	// The init script creates each database named by a psql variable, whose default it sets
	// with \set (compose passes no variables), with a CREATE DATABASE for that variable.
	defaultName := regexp.MustCompile(`(?m)^\\set\s+([a-z_]+_db)\s+([A-Za-z0-9_]+)\s*$`)
	for _, m := range pg.Volumes {
		if m.Type == "bind" && strings.HasPrefix(m.Target, "/docker-entrypoint-initdb.d") {
			script := composeReadFile(t, m.Source)
			for _, sm := range defaultName.FindAllStringSubmatch(script, -1) {
				if strings.Contains(script, "format('CREATE DATABASE %I OWNER %I', :'"+sm[1]+"'") {
					created[sm[2]] = true
				}
			}
		}
	}
	for _, db := range []string{chorusDB, temporalDB, visibilityDB} {
		require.True(t, created[db], "nothing creates database %q: add it to the postgres init script (created: %v)", db, created)
	}

	require.NotNil(t, pg.Healthcheck, "postgres needs a health check (pg_isready) for the service_healthy conditions")
	require.Contains(t, strings.Join(pg.Healthcheck.Test, " "), "pg_isready", "postgres should be health-checked with pg_isready")
	hasData := false
	for _, m := range pg.Volumes {
		if m.Type == "volume" && m.Target == "/var/lib/postgresql/data" {
			require.Contains(t, lc.Volumes, m.Source, "postgres mounts volume %q, which the top-level volumes: does not declare", m.Source)
			hasData = true
		}
	}
	require.True(t, hasData, "postgres must keep /var/lib/postgresql/data in a named volume")
}

func TestComposeTemporalWiring(t *testing.T) {
	lc := loadCompose(t)
	api, server := lc.service(t, svcChorusAPI), lc.service(t, svcTemporal)

	addr := api.Environment["TEMPORAL_ADDRESS"]
	host, port := composeHostPort(t, "chorus-api TEMPORAL_ADDRESS", addr)
	require.Equal(t, svcTemporal, host, "TEMPORAL_ADDRESS %q does not name the %s service", addr, svcTemporal)
	frontend := 7233
	if v := server.Environment["FRONTEND_GRPC_PORT"]; v != "" {
		p, err := strconv.Atoi(v)
		require.NoError(t, err, "temporal: FRONTEND_GRPC_PORT %q", v)
		frontend = p
	}
	require.Equal(t, frontend, port, "Chorus dials Temporal on port %d but the frontend listens on %d", port, frontend)
	require.Contains(t, server.containerPorts(), strconv.Itoa(port),
		"the temporal service does not expose port %d that TEMPORAL_ADDRESS uses (ports/expose: %v)", port, server.containerPorts())

	for _, name := range []string{svcTemporalUI, svcTemporalNamespace} {
		require.Equal(t, addr, lc.service(t, name).Environment["TEMPORAL_ADDRESS"],
			"%s talks to a different Temporal frontend than Chorus (%s)", name, addr)
	}
	ns := api.Environment["TEMPORAL_NAMESPACE"]
	if ns == "" {
		ns = "default"
	}
	jobNS := lc.service(t, svcTemporalNamespace).Environment["TEMPORAL_NAMESPACE"]
	if jobNS == "" {
		jobNS = "default"
	}
	require.Equal(t, ns, jobNS, "temporal-namespace creates namespace %q but Chorus uses %q", jobNS, ns)

	// The scripts the one-shot jobs run exist and do what the job is for.
	schemaScript := composeReadFile(t, lc.service(t, svcTemporalSchema).mountedScript(t, svcTemporalSchema))
	for _, want := range []string{"temporal-sql-tool", "setup-schema", "update-schema", "/etc/temporal/schema/postgresql/v12",
		"temporal/versioned", "visibility/versioned", "DBNAME", "VISIBILITY_DBNAME"} {
		require.Contains(t, schemaScript, want, "the temporal-schema script does not mention %q", want)
	}
}

func TestComposeStartupOrder(t *testing.T) {
	lc := loadCompose(t)
	want := []struct{ service, dependency, condition string }{
		{svcTemporalSchema, svcPostgres, "service_healthy"},
		{svcTemporal, svcTemporalSchema, "service_completed_successfully"},
		{svcChorusMigrate, svcPostgres, "service_healthy"},
		{svcChorusAPI, svcChorusMigrate, "service_completed_successfully"},
		{svcChorusAPI, svcTemporalNamespace, "service_completed_successfully"},
		{svcChorusWorker, svcChorusMigrate, "service_completed_successfully"},
		{svcChorusWorker, svcTemporalNamespace, "service_completed_successfully"},
	}
	for _, w := range want {
		got, ok := lc.service(t, w.service).DependsOn[w.dependency]
		require.True(t, ok, "%s must depend on %s (condition %s)", w.service, w.dependency, w.condition)
		require.Equal(t, w.condition, got, "%s depends on %s with condition %s, want %s", w.service, w.dependency, got, w.condition)
	}
	for _, name := range []string{svcTemporalNamespace, svcTemporalUI} {
		_, ok := lc.service(t, name).DependsOn[svcTemporal]
		require.True(t, ok, "%s must depend on the temporal service", name)
	}
	for name, s := range lc.Services {
		for dep, cond := range s.DependsOn {
			d, ok := lc.Services[dep]
			require.True(t, ok, "%s depends on %s, which is not a service", name, dep)
			if cond == "service_healthy" {
				require.True(t, d.Healthcheck != nil && !d.Healthcheck.Disable,
					"%s waits for %s to be healthy, but %s has no health check", name, dep, dep)
			}
		}
	}
}

func TestComposeWorkerScales(t *testing.T) {
	lc := loadCompose(t)
	w := lc.service(t, svcChorusWorker)
	require.Empty(t, w.ContainerName, "chorus-worker sets container_name, so `--scale chorus-worker=N` would fail")
	require.Empty(t, w.Ports, "chorus-worker publishes ports %v; replicas would collide on the host port", w.Ports)
}

func TestComposeReferencedFilesExist(t *testing.T) {
	lc := loadCompose(t)
	for name, s := range lc.Services {
		for _, m := range s.Volumes {
			switch m.Type {
			case "bind":
				require.True(t, strings.HasPrefix(m.Source, "./"),
					"service %s bind-mounts %q; use a path inside the repository (./...)", name, m.Source)
				_, err := os.Stat(filepath.Join(composeRepoRoot, filepath.FromSlash(m.Source)))
				require.NoError(t, err, "service %s mounts %s, which does not exist in the repository", name, m.Source)
			case "volume":
				if m.Source != "" {
					require.Contains(t, lc.Volumes, m.Source,
						"service %s uses volume %q, which the top-level volumes: does not declare", name, m.Source)
				}
			}
		}
		if s.Build != nil {
			dockerfile := s.Build.Dockerfile
			if dockerfile == "" {
				dockerfile = "Dockerfile"
			}
			p := filepath.Join(composeRepoRoot, filepath.FromSlash(s.Build.Context), filepath.FromSlash(dockerfile))
			_, err := os.Stat(p)
			require.NoError(t, err, "service %s builds with %s, which does not exist", name, p)
		}
	}
}

// ---- Dockerfile ----

type dockerInstr struct{ cmd, args string }

// dockerStages splits the Dockerfile at the repository root into its stages.
func dockerStages(t *testing.T) [][]dockerInstr {
	t.Helper()
	var stages [][]dockerInstr
	joined := ""
	for _, line := range strings.Split(composeReadFile(t, "Dockerfile"), "\n") {
		trimmed := strings.TrimSpace(line)
		if joined == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if c, ok := strings.CutSuffix(trimmed, "\\"); ok {
			joined += c + " "
			continue
		}
		joined += trimmed
		cmd, args, _ := strings.Cut(joined, " ")
		joined = ""
		in := dockerInstr{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		require.NotEmpty(t, stages, "Dockerfile: %s before the first FROM", in.cmd)
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	require.NotEmpty(t, stages, "Dockerfile has no FROM")
	return stages
}

func TestComposeDockerfileBuildsStaticNonRootImage(t *testing.T) {
	stages := dockerStages(t)
	require.GreaterOrEqual(t, len(stages), 2, "the Dockerfile should be multi-stage (build, then a small runtime image)")

	// The stage that builds ./cmd/chorus, with cgo off (ENV in the stage or on the command).
	var build []dockerInstr
	for _, st := range stages {
		for _, in := range st {
			if in.cmd == "RUN" && strings.Contains(in.args, "go build") && strings.Contains(in.args, "./cmd/chorus") {
				build = st
				require.Contains(t, in.args, "-trimpath", "the go build of ./cmd/chorus should use -trimpath")
				cgoOff := strings.Contains(in.args, "CGO_ENABLED=0")
				for _, e := range st {
					if e.cmd == "ENV" && regexp.MustCompile(`\bCGO_ENABLED[= ]0\b`).MatchString(e.args) {
						cgoOff = true
					}
				}
				require.True(t, cgoOff, "the Dockerfile builds ./cmd/chorus without CGO_ENABLED=0: the binary would not be static")
			}
		}
	}
	require.NotNil(t, build, "no RUN in the Dockerfile runs `go build ... ./cmd/chorus`")

	// The build image's Go is at least the go directive of go.mod.
	from := strings.Fields(build[0].args)[0]
	repo, tag, _ := composeImageRef(from)
	require.Equal(t, "golang", repo, "the build stage should start FROM golang, not %s", from)
	goMod := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(composeReadFile(t, "go.mod"))
	require.NotNil(t, goMod, "go.mod has no go directive")
	img := regexp.MustCompile(`^(\d+)\.(\d+)`).FindStringSubmatch(tag)
	require.NotNil(t, img, "the golang build image %q has no Go version in its tag", from)
	version := func(major, minor string) int {
		a, _ := strconv.Atoi(major)
		b, _ := strconv.Atoi(minor)
		return a*1000 + b
	}
	require.GreaterOrEqual(t, version(img[1], img[2]), version(goMod[1], goMod[2]),
		"the build image %s is older than go.mod's go %s.%s", from, goMod[1], goMod[2])

	final := stages[len(stages)-1]
	finalFrom := strings.Fields(final[0].args)[0]
	_, finalTag, finalDigest := composeImageRef(finalFrom)
	require.True(t, finalFrom == "scratch" || finalDigest != "" || (finalTag != "" && finalTag != "latest"),
		"the runtime image %q has no explicit tag", finalFrom)
	user, entrypoint, exposed := "", "", []string{}
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		}
	}
	name, _, _ := strings.Cut(user, ":")
	require.NotEmpty(t, name, "the runtime stage has no USER: the container would run as root")
	require.NotContains(t, []string{"root", "0"}, name, "the runtime stage runs as %q; use a non-root user", user)
	require.Equal(t, `["chorus"]`, strings.ReplaceAll(entrypoint, " ", ""),
		"the runtime image's ENTRYPOINT should be [\"chorus\"] (compose passes subcommands)")
	require.Contains(t, exposed, "8637", "the runtime image should EXPOSE 8637, chorus's default port")

	// Compose health checks run a program inside the container: the runtime image must have it.
	lc := loadCompose(t)
	for _, svc := range []string{svcChorusAPI, svcChorusWorker} {
		hc := lc.service(t, svc).Healthcheck
		if hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] == "NONE" {
			continue
		}
		require.False(t, finalFrom == "scratch" || strings.Contains(finalFrom, "distroless"),
			"service %s health-checks with %q, but the runtime image %s has no shell or tools to run it", svc, hc.Test, finalFrom)
	}

	// Secrets kept in .env for compose never enter the build context.
	ignore := strings.Fields(composeReadFile(t, ".dockerignore"))
	require.Contains(t, ignore, ".env",
		".dockerignore must exclude .env (it holds CHORUS_BOOTSTRAP_ADMIN_KEY and the database password)")
}
