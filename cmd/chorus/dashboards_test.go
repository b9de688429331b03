package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The Grafana dashboard and the Prometheus alert rules in deploy/ (docs/operations.md "Metrics") name only
// metrics Chorus exports: requireReferencedExported checks them against a live scrape
// (TestMetricsEndpoint), with metricNames reading the names out of each PromQL expression.

const (
	dashboardFile = "deploy/grafana/dashboards/chorus.json"
	alertsFile    = "deploy/prometheus/alerts.yml"
)

// prometheusSynthetic are series Prometheus itself adds to every scrape target.
var prometheusSynthetic = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

var (
	promStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
		"offset", "start", "end", "inf", "nan", "atan2"}
)

// metricNames returns the metric names a PromQL expression selects: every identifier that is
// not in a string, a label matcher, a range, a grouping clause, a keyword or a function call.
func metricNames(expr string) []string {
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRanges.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && (e[loc[0]-1] == '$' || e[loc[0]-1] == '.' || (e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9')) {
			continue // a Grafana variable, or a number's exponent or suffix
		}
		if strings.HasPrefix(strings.TrimLeft(e[loc[1]:], " \t\n"), "(") || slices.Contains(promKeywords, strings.ToLower(name)) {
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (namespace, workflow_type) (increase(temporal_workflow_task_execution_failed_total[5m])) > 0`:                                          {"temporal_workflow_task_execution_failed_total"},
		`sum(rate(chorus_tool_calls_total{outcome="error", tool=~"chorus_(get|list)_.*"}[5m])) / sum(rate(chorus_tool_calls_total[$__rate_interval]))`: {"chorus_tool_calls_total"},
		`histogram_quantile(0.99, sum by (le) (rate(chorus_tool_call_duration_seconds_bucket[5m]))) > 2.5`:                                             {"chorus_tool_call_duration_seconds_bucket"},
		`sum(increase(a_total[1h])) or vector(0)`:                        {"a_total"},
		`x_bytes offset 5m / on (instance) group_left (job) y_info`:      {"x_bytes", "y_info"},
		`up{job=~"chorus-.*"} == 0 and bool process_start_time_seconds`:  {"up", "process_start_time_seconds"},
		`topk(10, sum without (tool) (rate(m:recorded[1m]))) > 1e3`:      {"m:recorded"},
		`label_replace(go_sql_open_connections, "a", "$1", "b", "(.*)")`: {"go_sql_open_connections"},
	} {
		require.Equal(t, want, metricNames(expr), expr)
	}
}

// referencedExprs returns every PromQL expression of the dashboard and the alert rules, keyed by
// where it is.
func referencedExprs(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string]string{}

	var dash struct {
		Panels []dashPanel `json:"panels"`
	}
	b, err := os.ReadFile(filepath.Join(root, dashboardFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &dash))
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "%s: panel %q has a target without expr", dashboardFile, p.Title)
				out[dashboardFile+": "+p.Title+" "+tg.RefID] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	b, err = os.ReadFile(filepath.Join(root, alertsFile))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &rules))
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Expr, "%s: rule %q has no expr", alertsFile, r.Alert)
			out[alertsFile+": "+r.Alert] = r.Expr
			alerts++
		}
	}
	require.GreaterOrEqual(t, alerts, 5, "%s: the alert rules are missing", alertsFile)
	return out
}

type dashPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"`
}

// requireReferencedExported fails unless every metric the dashboard and the alert rules name
// is among the scraped families (a histogram exports name_bucket, name_sum and name_count).
func requireReferencedExported(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	exported := map[string]bool{}
	for _, s := range prometheusSynthetic {
		exported[s] = true
	}
	for name, f := range fams {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY:
			exported[name+"_sum"], exported[name+"_count"] = true, true
			if f.GetType() == dto.MetricType_HISTOGRAM {
				exported[name+"_bucket"] = true
			} else {
				exported[name] = true
			}
		default:
			exported[name] = true
		}
	}
	exprs := referencedExprs(t)
	require.NotEmpty(t, exprs)
	for where, expr := range exprs {
		names := metricNames(expr)
		require.NotEmpty(t, names, "%s: %q names no metric", where, expr)
		for _, n := range names {
			require.True(t, exported[n], "%s names %s, which a running Chorus does not export (expression %q)", where, n, expr)
		}
	}
}
