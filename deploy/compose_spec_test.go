package deploy

// docker-compose.yml read by the compose specification's own Go loader (compose-go, what
// `docker compose` itself uses): the file must load as docker compose would load it, and every
// file, variable and service dependency it refers to must resolve. It must also run Temporal
// with the configuration files that `make test-prod` proves (TestProductionTopology).

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The files of deploy/ that both docker-compose.yml and TestProductionTopology use.
const (
	deployInitSQL       = "deploy/postgres-init.sql"
	deploySchemaScript  = "deploy/temporal-setup-schema.sh"
	deployServerConfig  = "deploy/temporal-server.yaml"
	deployDynamicConfig = "deploy/temporal-dynamicconfig.yaml"
)

// composeTestKey is a well-formed admin key for loading the file (compose requires one).
const composeTestKey = "cho_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"

// loadComposeSpec loads docker-compose.yml with compose-go, with env as the only environment
// (no .env file, no OS environment), resolving relative paths against the repository root.
func loadComposeSpec(t *testing.T, env ...string) (*types.Project, error) {
	t.Helper()
	root, err := filepath.Abs(composeRepoRoot)
	require.NoError(t, err)
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, composeFile)},
		cli.WithWorkingDirectory(root), cli.WithEnv(env), cli.WithResolvedPaths(true), cli.WithConsistency(true),
		cli.WithInterpolation(true), cli.WithNormalization(true))
	require.NoError(t, err)
	return opts.LoadProject(context.Background())
}

func TestComposeSpecLoads(t *testing.T) {
	p, err := loadComposeSpec(t, "CHORUS_BOOTSTRAP_ADMIN_KEY="+composeTestKey)
	require.NoError(t, err, "docker compose would refuse %s", composeFile)
	require.ElementsMatch(t, append(slices.Clone(composeRequiredServices), composeMonitoringServices...), p.ServiceNames(),
		"the services are Chorus's stack and its monitoring (Prometheus, Grafana)")

	// Without the admin key, compose stops with the file's message rather than starting an API
	// with no key or an empty one.
	_, err = loadComposeSpec(t)
	require.Error(t, err, "the stack loads without CHORUS_BOOTSTRAP_ADMIN_KEY")
	require.Contains(t, err.Error(), "CHORUS_BOOTSTRAP_ADMIN_KEY")
}

// Every ${VAR} has a default or stops compose with a message: none silently becomes "".
func TestComposeSpecVariablesResolve(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(composeRepoRoot, composeFile))
	require.NoError(t, err)
	var model map[string]any
	require.NoError(t, yaml.Unmarshal(data, &model))
	vars := template.ExtractVariables(model, nil)
	require.NotEmpty(t, vars)
	readme := composeReadFile(t, "deploy/README-compose.md") + composeReadFile(t, composeFile)
	for name, v := range vars {
		if v.Required {
			require.Contains(t, readme, name, "required variable %s is documented nowhere", name)
			continue
		}
		require.NotEmpty(t, v.DefaultValue, "${%s} has no default and is not required (${%s:?message}): "+
			"unset, it would become an empty string", name, name)
	}
	// With every defaulted variable unset, nothing interpolates to an empty value.
	p, err := loadComposeSpec(t, "CHORUS_BOOTSTRAP_ADMIN_KEY="+composeTestKey)
	require.NoError(t, err)
	for _, s := range p.Services {
		for k, v := range s.Environment {
			require.True(t, v != nil && *v != "", "service %s: %s is empty", s.Name, k)
		}
	}
}

// Every file a service mounts or builds from exists in the repository.
func TestComposeSpecFilesResolve(t *testing.T) {
	p, err := loadComposeSpec(t, "CHORUS_BOOTSTRAP_ADMIN_KEY="+composeTestKey)
	require.NoError(t, err)
	root, _ := filepath.Abs(composeRepoRoot)
	binds := 0
	for _, s := range p.Services {
		for _, v := range s.Volumes {
			switch v.Type {
			case types.VolumeTypeBind:
				require.True(t, strings.HasPrefix(v.Source, root+string(filepath.Separator)),
					"service %s bind-mounts %s, outside the repository", s.Name, v.Source)
				_, err := os.Stat(v.Source)
				require.NoError(t, err, "service %s mounts %s, which does not exist", s.Name, v.Source)
				binds++
			case types.VolumeTypeVolume:
				_, ok := p.Volumes[v.Source]
				require.True(t, ok, "service %s uses volume %q, which is not declared", s.Name, v.Source)
			}
		}
		for _, f := range s.EnvFiles {
			_, err := os.Stat(f.Path)
			require.True(t, err == nil || !bool(f.Required), "service %s reads env_file %s, which does not exist", s.Name, f.Path)
		}
		if s.Build != nil {
			require.DirExists(t, s.Build.Context, "service %s builds from %s", s.Name, s.Build.Context)
			df := s.Build.Dockerfile
			if !filepath.IsAbs(df) {
				df = filepath.Join(s.Build.Context, df)
			}
			require.FileExists(t, df, "service %s builds with %s", s.Name, df)
		}
	}
	require.Positive(t, binds, "no bind mount was checked")
}

// Every dependency names a service, its condition can be met, and the graph has no cycle.
func TestComposeSpecDependenciesResolve(t *testing.T) {
	p, err := loadComposeSpec(t, "CHORUS_BOOTSTRAP_ADMIN_KEY="+composeTestKey)
	require.NoError(t, err)
	deps := 0
	for _, s := range p.Services {
		for name, d := range s.DependsOn {
			dep, ok := p.Services[name]
			require.True(t, ok, "%s depends on %s, which is not a service", s.Name, name)
			deps++
			switch d.Condition {
			case types.ServiceConditionHealthy:
				require.True(t, dep.HealthCheck != nil && !dep.HealthCheck.Disable && len(dep.HealthCheck.Test) > 0,
					"%s waits for %s to be healthy, but %s has no health check", s.Name, name, name)
			case types.ServiceConditionCompletedSuccessfully:
				require.Equal(t, "no", dep.Restart, "%s waits for %s to complete, but %s restarts (restart: %s)", s.Name, name, name, dep.Restart)
			case types.ServiceConditionStarted:
			default:
				require.Failf(t, "unknown condition", "%s depends on %s with condition %q", s.Name, name, d.Condition)
			}
		}
	}
	require.Positive(t, deps)
	// No cycle: repeatedly remove the services whose dependencies are all removed.
	left := map[string]types.ServiceConfig{}
	for name, s := range p.Services {
		left[name] = s
	}
	for len(left) > 0 {
		progress := false
		for name, s := range left {
			ready := true
			for d := range s.DependsOn {
				if _, waiting := left[d]; waiting {
					ready = false
				}
			}
			if ready {
				delete(left, name)
				progress = true
			}
		}
		require.True(t, progress, "the depends_on graph has a cycle among %v", slices.Sorted(func(yield func(string) bool) {
			for n := range left {
				if !yield(n) {
					return
				}
			}
		}))
	}
}

// mountOf is the container path where a service mounts the repository file rel.
func mountOf(t *testing.T, s types.ServiceConfig, rel string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join(composeRepoRoot, filepath.FromSlash(rel)))
	require.NoError(t, err)
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Source == abs {
			return v.Target
		}
	}
	require.Failf(t, "missing mount", "service %s does not mount %s", s.Name, rel)
	return ""
}

// Compose runs what `make test-prod` proves: the same Temporal configuration, dynamic
// configuration, schema and namespace scripts and database script, and the same server version.
func TestComposeUsesTheTestedConfiguration(t *testing.T) {
	p, err := loadComposeSpec(t, "CHORUS_BOOTSTRAP_ADMIN_KEY="+composeTestKey)
	require.NoError(t, err)
	server := p.Services[svcTemporal]

	// temporal-server --config-file FILE start: our config file.
	args := []string(server.Entrypoint)
	require.NotEmpty(t, args, "the temporal service must run temporal-server with deploy's configuration")
	require.Equal(t, "temporal-server", args[0])
	flag := func(name string) string {
		i := slices.Index(args, name)
		require.True(t, i >= 0 && i+1 < len(args), "temporal entrypoint lacks %s: %v", name, args)
		return args[i+1]
	}
	require.Equal(t, "start", args[len(args)-1])
	require.Equal(t, flag("--config-file"), mountOf(t, server, deployServerConfig),
		"the temporal service does not read deploy/temporal-server.yaml")
	require.Equal(t, mountOf(t, server, deployDynamicConfig), *server.Environment["DYNAMIC_CONFIG_FILE_PATH"],
		"DYNAMIC_CONFIG_FILE_PATH is not where deploy/temporal-dynamicconfig.yaml is mounted")

	require.Contains(t, []string(p.Services[svcTemporalSchema].Entrypoint), mountOf(t, p.Services[svcTemporalSchema], deploySchemaScript),
		"%s does not run %s", svcTemporalSchema, deploySchemaScript)
	require.True(t, strings.HasPrefix(mountOf(t, p.Services[svcPostgres], deployInitSQL), "/docker-entrypoint-initdb.d/"),
		"postgres does not run %s at its first start", deployInitSQL)

	// Every variable the server config reads from the environment is one compose sets or one
	// whose default suits a container.
	cfg := composeReadFile(t, deployServerConfig)
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`env "([A-Z_]+)"`).FindAllStringSubmatch(cfg, -1) {
		read[m[1]] = true
	}
	for _, v := range []string{"POSTGRES_SEEDS", "DB_PORT", "POSTGRES_USER", "POSTGRES_PWD", "DBNAME", "VISIBILITY_DBNAME",
		"BIND_ON_IP", "TEMPORAL_BROADCAST_ADDRESS", "DYNAMIC_CONFIG_FILE_PATH", "NUM_HISTORY_SHARDS"} {
		require.True(t, read[v], "%s does not read %s", deployServerConfig, v)
		require.Contains(t, server.Environment, v, "the temporal service does not set %s", v)
	}
	require.Equal(t, "0.0.0.0", *server.Environment["BIND_ON_IP"], "in a container the frontend must listen beyond loopback")

	// The server image is the version tools/server/go.mod pins (the one test-prod and the dev
	// server run), and the admin tools (schema files, CLI) are of the same release.
	pinned := regexp.MustCompile(`(?m)^\s*go\.temporal\.io/server v(\S+)`).FindStringSubmatch(composeReadFile(t, "tools/server/go.mod"))
	require.NotNil(t, pinned, "tools/server/go.mod does not pin go.temporal.io/server")
	require.Equal(t, "temporalio/server:"+pinned[1], server.Image, "compose runs a different Temporal server than make test-prod")
	adminTag := strings.TrimPrefix(p.Services[svcTemporalSchema].Image, "temporalio/admin-tools:")
	require.True(t, adminTag == pinned[1] || strings.HasPrefix(adminTag, pinned[1]+"-"),
		"the schema job's admin tools (%s) are not of the pinned server release %s", p.Services[svcTemporalSchema].Image, pinned[1])

	// The namespace job is chorus temporal setup in Chorus's own image, as make test-prod runs
	// it: the search attributes it registers are workflows.SearchAttributeKeys, stated once.
	ns := p.Services[svcTemporalNamespace]
	require.Equal(t, p.Services[svcChorusAPI].Image, ns.Image, "the namespace job does not run Chorus's image")
	require.Empty(t, ns.Entrypoint, "the namespace job replaces the image's entrypoint (chorus)")
	require.Equal(t, []string{"temporal", "setup"}, []string(ns.Command), "the namespace job does not run chorus temporal setup")
}
