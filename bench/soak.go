package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/store"
)

// The soak phase (docs/write-path.md, "Bounded growth"): agents claim and release their tasks,
// every call with a requestId of its own, for --soak-duration, while the stack the bench started
// prunes with a short window (--soak-window, every --prune-interval). It samples the sizes of the
// requestId ledger and the change journal: with pruning on they rise for one window and then stay
// flat, around the calls of one window, however long the soak runs. The hour: make bench
// ARGS="--phases soak --soak-duration 1h --soak-window 5m".

// soakSample is one look at the bounded tables during the soak.
type soakSample struct {
	Elapsed  time.Duration  `json:"elapsedNs"`
	Calls    int            `json:"calls"`
	Retained map[string]int `json:"retained"`
}

func (b *bencher) soakPhase(ctx context.Context) *phaseResult {
	o := b.o
	res := &phaseResult{Name: fmt.Sprintf("Soak: %d agents claim and release for %s; retention %s, pruning every %s",
		o.SoakAgents, o.SoakDuration, o.SoakWindow, o.PruneInterval)}
	if b.t.st == nil || o.Endpoint != "" {
		res.Skipped = "needs the stack the bench starts (it sets the retention) and its database"
		return res
	}
	devs, err := b.developers(ctx, o.SoakAgents)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	ids, err := b.createTasks(ctx, b.admin, b.project, o.SoakAgents, "soak")
	if err != nil {
		res.Skipped = "creating the tasks failed: " + err.Error()
		return res
	}
	claims, releases := &recorder{}, &recorder{}
	var mu sync.Mutex
	calls := 0
	end := time.Now().Add(o.SoakDuration)
	sctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var samples []soakSample
	start := time.Now()
	sample := func() {
		sizes, err := b.t.st.RetainedRows(ctx)
		if err != nil {
			return
		}
		mu.Lock()
		samples = append(samples, soakSample{Elapsed: time.Since(start), Calls: calls, Retained: sizes})
		mu.Unlock()
	}
	go func() {
		tick := time.NewTicker(o.SoakSample)
		defer tick.Stop()
		sample()
		for {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	wall := parallel(len(devs), func(i int) {
		for sctx.Err() == nil {
			for _, c := range []struct {
				tool string
				rec  *recorder
			}{{"chorus_claim_task", claims}, {"chorus_release_task", releases}} {
				err := c.rec.time(func() error {
					return devs[i].Call(ctx, c.tool, map[string]any{"taskUuid": ids[i], "requestId": store.NewUUID()}, nil)
				})
				if err == nil {
					mu.Lock()
					calls++
					mu.Unlock()
				}
			}
		}
	})
	sample()
	res.Rows = append(res.Rows, row{Name: "chorus_claim_task", Concurrency: len(devs), summary: claims.summary(wall)},
		row{Name: "chorus_release_task", Concurrency: len(devs), summary: releases.summary(wall)})
	res.Notes = append(res.Notes, soakTable(samples), soakVerdict(samples, o.SoakWindow+o.PruneInterval))
	b.soak = samples
	return res
}

// soakTable is the samples as a Markdown table.
func soakTable(samples []soakSample) string {
	var b strings.Builder
	b.WriteString("| elapsed | calls | tool_requests | change_journal | claim_next_attempts |\n|---:|---:|---:|---:|---:|\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", s.Elapsed.Round(time.Second), s.Calls, s.Retained["tool_requests"],
			s.Retained["change_journal"], s.Retained["claim_next_attempts"])
	}
	return strings.TrimRight(b.String(), "\n")
}

// soakVerdict compares the ledger's and the journal's largest sizes in the first and second
// halves of the time after settle (one window and one pruning interval): flat means the second
// half's peak is within a fifth of the first's (calls go on at the same pace, so without
// pruning it would grow by the calls of the half).
func soakVerdict(samples []soakSample, settle time.Duration) string {
	var steady []soakSample
	for _, s := range samples {
		if s.Elapsed >= settle {
			steady = append(steady, s)
		}
	}
	if len(steady) < 4 {
		return fmt.Sprintf("Too short to judge flatness: run longer than a window and a pruning interval (%s) plus a few samples.", settle)
	}
	half := len(steady) / 2
	var parts []string
	for _, table := range []string{"tool_requests", "change_journal"} {
		peak := func(ss []soakSample) int {
			m := 0
			for _, s := range ss {
				m = max(m, s.Retained[table])
			}
			return m
		}
		first, second := peak(steady[:half]), peak(steady[half:])
		grown := steady[len(steady)-1].Calls - steady[half].Calls
		verdict := "flat"
		if float64(second) > 1.2*float64(max(first, 1)) {
			verdict = "GROWING"
		}
		parts = append(parts, fmt.Sprintf("%s peak %d then %d (%s; %d calls meanwhile)", table, first, second, verdict, grown))
	}
	return "After the first window and pruning interval: " + strings.Join(parts, "; ") + "."
}
