package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/vocab"
)

// judgement is what one observation shows: findings, or why it shows nothing certain.
type judgement struct {
	findings []Finding // disagreements, StuckActivity excepted
	stuck    []Finding // StuckActivity findings
	// busy is why the pair could not be compared ("" when it could): a change was moving it.
	busy string
}

// ownNextChange says whether the row holds a change the workflow would make next: one of its own
// changes (docs/write-path.md, "One write protocol": "<workflow id>#<new version>@<update>") one
// version ahead of its state. Which update it is cannot be told from outside (a pending
// activity's input is not described), so this also matches a change a reset abandoned; callers
// pair it with work in flight (a pending activity or workflow task) before calling it a change
// being applied.
func ownNextChange(ob observation) bool {
	return ob.row.exists && ob.row.version == ob.wf.version+1 &&
		strings.HasPrefix(ob.row.changeID, fmt.Sprintf("%s#%d@", ob.id, ob.wf.version+1))
}

// judge says what an observation shows. now dates the stuck test.
func (o *Ops) judge(ob observation, now time.Time) judgement {
	var j judgement
	for _, a := range ob.run.pending {
		if a.LastFailure == "" {
			continue
		}
		if a.Attempt >= o.stuckAttempts() || a.LastFailedAt != nil && now.Sub(*a.LastFailedAt) >= o.stuckAfter() {
			j.stuck = append(j.stuck, Finding{WorkflowID: ob.id, Kind: StuckActivity, Activity: &a,
				Detail: fmt.Sprintf("%s has failed %d times and keeps being retried (last failure: %s); commands on the entity "+
					"wait behind it. Fix that cause, or terminate the workflow and run chorus ops repair %s to restart it "+
					"from its rows", a.Type, a.Attempt-1, a.LastFailure, ob.id)})
		}
	}
	if ob.moving != "" {
		j.busy = ob.moving
		return j
	}
	if !ob.run.found || ob.run.status != "running" {
		switch {
		case !ob.row.exists: // no row and no running workflow: a deleted entity, nothing to compare
		case !ob.run.found:
			j.findings = []Finding{{WorkflowID: ob.id, Kind: MissingWorkflow, Detail: "the row exists but no workflow was ever started"}}
		default:
			j.findings = []Finding{{WorkflowID: ob.id, Kind: ClosedWorkflow,
				Detail: fmt.Sprintf("the row exists but the workflow's last run is %s", ob.run.status)}}
		}
		return j
	}
	diffs, lost := compare(ob.row, ob.wf)
	if len(diffs) == 0 && len(lost) == 0 && ob.row.exists == ob.wf.exists {
		return j
	}
	if a, ok := ob.midChange(); ok {
		j.busy = a
		return j
	}
	switch {
	case !ob.row.exists && ob.wf.exists:
		j.findings = append(j.findings, Finding{WorkflowID: ob.id, Kind: MissingRow, Detail: "the workflow holds the entity but its row is missing"})
	case len(diffs) > 0:
		cols := make([]string, len(diffs))
		for i, d := range diffs {
			cols[i] = d.Column
		}
		j.findings = append(j.findings, Finding{WorkflowID: ob.id, Kind: Diverged, Detail: "differs in " + strings.Join(cols, ", "),
			Differences: diffs})
	}
	if len(lost) > 0 {
		j.findings = append(j.findings, lostFinding(ob.id, lost))
	}
	return j
}

// midChange says whether the row is legitimately ahead of the workflow's state, and why: the
// workflow has a write in flight whose change the row already holds (or whose delete already
// removed it), or the row holds its task's proposal's revoke, which the task's workflow adopts.
func (ob observation) midChange() (string, bool) {
	if len(ob.run.pending) > 0 {
		pending := make([]string, len(ob.run.pending))
		for i, a := range ob.run.pending {
			pending[i] = a.Type
		}
		why := "a change is being applied (" + strings.Join(pending, ", ") + " pending)"
		switch {
		case ownNextChange(ob):
			return why, true
		case !ob.row.exists && ob.wf.exists: // a delete in flight
			return why, true
		}
	}
	if ob.revokedRow() && ob.revokeInFlight {
		return "its proposal's revoke closed the row, and the workflow is adopting it", true
	}
	if mover, ok := ob.movedRow(); ok && ob.moveInFlight {
		return "a move of " + mover + " moved the row, and the workflow is adopting it", true
	}
	return "", false
}

// compare lists the columns where row and workflow differ, and the owned rows the workflow holds
// that are gone from the database. Nothing is compared without a row; only the row's columns
// when the workflow holds no entity (not created yet, or deleted).
func compare(row, wf side) (diffs, lost []Difference) {
	if !row.exists {
		return nil, nil
	}
	for _, c := range wf.Columns {
		if row.Values[c] != wf.Values[c] {
			diffs = append(diffs, Difference{Column: c, Row: row.Values[c], Workflow: wf.Values[c]})
		}
	}
	if !wf.exists {
		return diffs, nil
	}
	for _, p := range wf.PartNames {
		r, ok := row.Parts[p]
		switch {
		case !ok && lostable(p):
			lost = append(lost, Difference{Column: p, Row: "missing", Workflow: wf.Parts[p]})
		case r != wf.Parts[p]:
			diffs = append(diffs, Difference{Column: p, Row: r, Workflow: wf.Parts[p]})
		}
	}
	return diffs, lost
}

// lostFinding is the LostRows finding for the owned rows in lost.
func lostFinding(id string, lost []Difference) Finding {
	what := "elaboration rounds"
	if strings.HasPrefix(lost[0].Column, "criterion ") {
		what = "acceptance criteria"
	}
	return Finding{WorkflowID: id, Kind: LostRows, Differences: lost,
		Detail: fmt.Sprintf("%d %s rows are missing (the workflow holds them). Their text lived only in the database, so "+
			"chorus ops repair cannot recreate them: restore them from a backup of the database", len(lost), what)}
}

// verdict is what inspecting one entity found.
type verdict struct {
	id       string
	findings []Finding
	// busy is why the entity could not be compared ("" when it was).
	busy string
	// last is the observation the verdict rests on.
	last observation
}

// inspect observes an entity until two consecutive consistent observations agree on what they
// show, or until it has used its attempts (then it is busy). Stuck activities are reported
// whatever the comparison shows.
func (o *Ops) inspect(ctx context.Context, entity vocab.Entity, uuid string) (verdict, error) {
	v := verdict{id: vocab.WorkflowID(entity, uuid)}
	var prev string
	pause := o.pause()
	for attempt := range o.attempts() {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return v, ctx.Err()
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
		}
		ob, err := o.observe(ctx, entity, uuid)
		if err != nil {
			return v, err
		}
		j := o.judge(ob, time.Now())
		v.last, v.findings, v.busy = ob, j.stuck, j.busy
		if j.busy != "" && len(j.stuck) > 0 {
			v.busy = "" // stuck, not busy: the finding says why it cannot be compared
			return v, nil
		}
		if j.busy != "" {
			prev = ""
			continue
		}
		if len(j.findings) == 0 {
			return v, nil
		}
		sig, _ := json.Marshal(j.findings)
		if string(sig) == prev {
			v.findings = append(j.findings, j.stuck...)
			return v, nil
		}
		prev = string(sig)
		v.busy = "it kept changing while it was compared"
	}
	return v, nil
}
