package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The Grafana dashboard and the Prometheus alert rules in deploy/ (docs/operations.md "Metrics");
// that they name only metrics Chorus exports is checked against a live scrape in cmd/chorus
// (TestMetricsEndpoint).
const (
	dashboardFile = "deploy/grafana/dashboards/chorus.json"
	alertsFile    = "deploy/prometheus/alerts.yml"
)

// The compose stack provisions what deploy/ holds: Prometheus loads the alert rules and scrapes
// every Chorus process on its port, and Grafana gets the data source and the dashboard.
func TestComposeMetricsStack(t *testing.T) {
	root := composeRepoRoot
	var compose struct {
		Services map[string]struct {
			Image   string   `yaml:"image"`
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &compose))
	mounts := func(service string) map[string]string { // container path -> repository path
		s, ok := compose.Services[service]
		require.True(t, ok, "docker-compose.yml has no %s service", service)
		out := map[string]string{}
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if strings.HasPrefix(parts[0], "./") {
				out[parts[1]] = strings.TrimPrefix(parts[0], "./")
			}
		}
		return out
	}

	prom := mounts("prometheus")
	require.Equal(t, alertsFile, prom["/etc/prometheus/alerts.yml"])
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			Job string `yaml:"job_name"`
			DNS []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	b, err = os.ReadFile(filepath.Join(root, prom["/etc/prometheus/prometheus.yml"]))
	require.NoError(t, err, "prometheus must mount its configuration at /etc/prometheus/prometheus.yml")
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	require.Contains(t, cfg.RuleFiles, "/etc/prometheus/alerts.yml")
	scraped := map[string]int{}
	for _, sc := range cfg.ScrapeConfigs {
		for _, d := range sc.DNS {
			for _, n := range d.Names {
				scraped[n] = d.Port
			}
		}
	}
	require.Equal(t, map[string]int{"chorus-api": 9637, "chorus-worker": 9637}, scraped,
		"Prometheus scrapes every replica of chorus-api and chorus-worker on CHORUS_METRICS_ADDR's port")
	require.Contains(t, string(mustRead(t, filepath.Join(root, "docker-compose.yml"))), "CHORUS_METRICS_ADDR: 0.0.0.0:9637",
		"the Chorus processes serve /metrics on the port Prometheus scrapes")

	graf := mounts("grafana")
	require.Equal(t, "deploy/grafana/provisioning/datasources", graf["/etc/grafana/provisioning/datasources"])
	require.Equal(t, "deploy/grafana/provisioning/dashboards", graf["/etc/grafana/provisioning/dashboards"])
	require.Equal(t, filepath.ToSlash(filepath.Dir(dashboardFile)), graf["/var/lib/grafana/dashboards"])
	provider, err := os.ReadFile(filepath.Join(root, "deploy/grafana/provisioning/dashboards/chorus.yml"))
	require.NoError(t, err)
	require.Contains(t, string(provider), "path: /var/lib/grafana/dashboards")
	datasource, err := os.ReadFile(filepath.Join(root, "deploy/grafana/provisioning/datasources/prometheus.yml"))
	require.NoError(t, err)
	require.Contains(t, string(datasource), "uid: prometheus")
	require.Contains(t, string(datasource), "url: http://prometheus:9090")
	var dash struct {
		UID string `json:"uid"`
	}
	b, err = os.ReadFile(filepath.Join(root, dashboardFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &dash))
	require.NotEmpty(t, dash.UID)
	require.NotContains(t, string(b), "${DS_", "the dashboard must name the provisioned data source (uid prometheus), not an import variable")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
