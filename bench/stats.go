package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// recorder collects the latencies and errors of one measured operation; safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	lat    []time.Duration
	errors int
	first  time.Time
	last   time.Time
	sample string // the first error's text, to show what went wrong
}

// observe records one call that started at start and ended now with err.
func (r *recorder) observe(start time.Time, err error) {
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first.IsZero() || start.Before(r.first) {
		r.first = start
	}
	if end.After(r.last) {
		r.last = end
	}
	if err != nil {
		r.errors++
		if r.sample == "" {
			r.sample = err.Error()
		}
		return
	}
	r.lat = append(r.lat, end.Sub(start))
}

// time runs f and records it.
func (r *recorder) time(f func() error) error {
	start := time.Now()
	err := f()
	r.observe(start, err)
	return err
}

// summary is what a table row shows of a recorder. Rate is successful calls per second of wall
// time from the first call's start to the last call's end (or over wall, when given).
type summary struct {
	N      int     `json:"n"`
	Errors int     `json:"errors"`
	P50Ms  float64 `json:"p50Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MeanMs float64 `json:"meanMs"`
	MaxMs  float64 `json:"maxMs"`
	Rate   float64 `json:"perSec"`
	WallS  float64 `json:"wallSeconds"`
	Error  string  `json:"firstError,omitempty"`
}

func (r *recorder) summary(wall time.Duration) summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := summarize(r.lat, r.errors)
	if wall <= 0 && !r.first.IsZero() {
		wall = r.last.Sub(r.first)
	}
	s.WallS = wall.Seconds()
	if wall > 0 {
		s.Rate = float64(s.N) / wall.Seconds()
	}
	s.Error = r.sample
	return s
}

// summarize computes count, percentiles, mean and max of latencies (no rate).
func summarize(lat []time.Duration, errors int) summary {
	s := summary{N: len(lat), Errors: errors}
	if len(lat) == 0 {
		return s
	}
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	s.P50Ms = ms(percentile(sorted, 50))
	s.P95Ms = ms(percentile(sorted, 95))
	s.P99Ms = ms(percentile(sorted, 99))
	s.MeanMs = ms(total / time.Duration(len(sorted)))
	s.MaxMs = ms(sorted[len(sorted)-1])
	return s
}

// percentile is the nearest-rank percentile of sorted (ascending): the smallest value with at
// least p percent of the values at or below it. 0 for an empty slice.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ratio is a/b, or 0 when either is missing (a floor that was not measured gives no ratio).
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// comparison is one figure of a row divided by the same figure of a floor.
type comparison struct {
	Floor string  `json:"floor"` // the floor's name, e.g. "update + local activity p50"
	Ratio float64 `json:"ratio"`
}

// row is one line of a phase's table.
type row struct {
	Name        string `json:"name"`
	Concurrency int    `json:"concurrency"`
	summary
	VsFloor []comparison `json:"vsFloor,omitempty"`
	Note    string       `json:"note,omitempty"`
}

// phaseResult is one phase's table.
type phaseResult struct {
	Name    string   `json:"name"`
	Rows    []row    `json:"rows"`
	Notes   []string `json:"notes,omitempty"`
	Skipped string   `json:"skipped,omitempty"`
	// WorkflowTaskFailures counts the workflow tasks that failed or timed out while the phase
	// ran (nil when they could not be counted: no Temporal address).
	WorkflowTaskFailures *wfTaskFailures `json:"workflowTaskFailures,omitempty"`
	Started              time.Time       `json:"started"`
	Ended                time.Time       `json:"ended"`
	// Detail adds the p95 and max columns to the table.
	Detail bool `json:"-"`
	// Targets are the phase's goals, each met or not (printed as PASS or FAIL lines).
	Targets []targetCheck `json:"targets,omitempty"`
	// Events and Memory are the events phase's figures.
	Events *eventFigures `json:"events,omitempty"`
	Memory *streamMemory `json:"streamMemory,omitempty"`
	// Webhooks is the webhooks phase's figures.
	Webhooks *hookFigures `json:"webhooks,omitempty"`
}

// targetCheck is one goal of a phase: a measured value against its limit, at most (or, with
// AtLeast, at least).
type targetCheck struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Limit   float64 `json:"limit"`
	AtLeast bool    `json:"atLeast,omitempty"`
	Unit    string  `json:"unit"`
	Pass    bool    `json:"pass"`
	Detail  string  `json:"detail,omitempty"`
}

// String is the check's line: "PASS event delivery p99: 120.5 ms (target <= 1000 ms)".
func (t targetCheck) String() string {
	verdict, op := "FAIL", "<="
	if t.Pass {
		verdict = "PASS"
	}
	if t.AtLeast {
		op = ">="
	}
	s := fmt.Sprintf("%s %s: %s %s (target %s %s %s)", verdict, t.Name, figure(t.Value), t.Unit, op, figure(t.Limit), t.Unit)
	if t.Detail != "" {
		s += "; " + t.Detail
	}
	return s
}

// figure is v to one decimal, without a trailing ".0".
func figure(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// comparable says whether the phase's rows are meant to be compared with the floors: all but
// the floors themselves, the reads, and the phases measured against targets of their own.
func (p *phaseResult) comparable() bool {
	return !strings.HasPrefix(p.Name, "Floors") && !strings.HasPrefix(p.Name, "Reads") && len(p.Targets) == 0
}

// writeTable prints a phase as a Markdown table.
func (p *phaseResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n### %s\n\n", p.Name)
	if p.Skipped != "" {
		fmt.Fprintf(w, "Skipped: %s\n", p.Skipped)
		return
	}
	if p.Detail {
		fmt.Fprintln(w, "| operation | conc | n | errors | p50 ms | p95 ms | p99 ms | max ms | per s |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	} else {
		fmt.Fprintln(w, "| operation | conc | n | errors | p50 ms | p99 ms | per s | vs floor |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---|")
	}
	compared := false
	for _, r := range p.Rows {
		var vs []string
		for _, c := range r.VsFloor {
			if c.Ratio > 0 {
				vs = append(vs, fmt.Sprintf("%.1fx %s", c.Ratio, c.Floor))
				compared = true
			}
		}
		name := r.Name
		if r.Note != "" {
			name += " (" + r.Note + ")"
		}
		if p.Detail {
			fmt.Fprintf(w, "| %s | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", name, max(r.Concurrency, 1), r.N, r.Errors,
				r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs, r.Rate)
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.1f | %.1f | %.1f | %s |\n", name, max(r.Concurrency, 1), r.N, r.Errors,
			r.P50Ms, r.P99Ms, r.Rate, strings.Join(vs, "; "))
	}
	if len(p.Targets) > 0 {
		fmt.Fprintln(w)
		for _, t := range p.Targets {
			fmt.Fprintf(w, "- %s\n", t)
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "\n%s\n", n)
	}
	if !compared && p.comparable() {
		fmt.Fprintf(w, "\nNo floor was measured in this run (the floors phase was not selected), so nothing is compared with one.\n")
	}
	for _, r := range p.Rows {
		if r.Errors > 0 && r.Error != "" {
			fmt.Fprintf(w, "\nFirst error of %s: %s\n", r.Name, r.Error)
		}
	}
}
