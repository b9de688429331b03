//go:build record

package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// TestRecordWorkflowHistories drives an idea to done and writes each workflow's history to
// ../workflows/testdata/histories, which the replay tests replay so that a change to workflow
// code that alters its commands fails `make test`. Histories are append-only: it writes new
// files named after today's date (with -2, -3, ... when that name is taken), never overwrites one,
// and adds each to SHA256SUMS, which the replay test holds every file to. It is built only with
// the "record" tag; run it after a deliberate workflow change (versioned with
// workflow.GetVersion), to record the new shapes; CHORUS_RECORD names the histories to write
// (comma-separated, e.g. "task-batch"; all of them when unset):
//
//	CHORUS_RECORD=task-batch go test -tags record ./mcp -run TestRecordWorkflowHistories
func TestRecordWorkflowHistories(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	pm := e.pmWithIdeaAdmin("PM")
	dev := e.client(e.agent("Dev", perm.DeveloperAgent))
	project := createProject(t, admin, "Apollo")
	idea := elaboratedIdea(t, pm, dev, project, "Single sign-on")
	ok(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": idea, "content": "now with details"}, nil)
	proposal, _ := fullProposal(t, pm, project, idea)
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
	ok(t, admin, "chorus_pm_reject_proposal", map[string]any{"proposalUuid": proposal, "reviewNote": "more detail"}, nil)
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
	var pv ProposalView
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
	schema := pv.MaterializedTasks[0].TaskUUID
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": schema}, nil)
	work(t, dev, schema)
	var v TaskView
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": schema}, &v)
	markAll(t, admin, schema, v, "failed")
	ok(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": schema}, nil)
	ok(t, dev, "chorus_submit_for_verify", map[string]any{"taskUuid": schema}, nil)
	markAll(t, admin, schema, v, "passed")
	ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": schema}, nil)
	ok(t, pm, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": proposal}, nil)

	var quick CreatedTasks
	args := map[string]any{"projectUuid": project, "requestId": "record-1", "tasks": []map[string]any{
		{"title": "Quick", "draftUuid": "q", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		{"title": "Follow-up", "dependsOnDraftUuids": []string{"q"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}
	ok(t, dev, "chorus_create_tasks", args, &quick)
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": quick.Tasks[0].UUID}, nil)
	ok(t, dev, "chorus_release_task", map[string]any{"taskUuid": quick.Tasks[0].UUID}, nil)
	ok(t, admin, "chorus_admin_close_task", map[string]any{"taskUuid": quick.Tasks[1].UUID}, nil)

	// A claim that lapses and is claimed again (docs/rules.md §5.10), and the idea moving to another
	// project with its proposal and tasks (§5.9).
	_, leased := leaseProject(t, admin, 1)
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": leased}, nil)
	waitReleased(t, admin, leased)
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": leased}, nil)
	ok(t, dev, "chorus_release_task", map[string]any{"taskUuid": leased}, nil)
	other := createProject(t, admin, "Hermes")
	ok(t, pm, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": other}, nil)
	ok(t, dev, "chorus_get_task", map[string]any{"taskUuid": schema}, nil)

	// An idea under a theme whose progress follows its proposal and task to done (refresh_progress
	// signals, idea_progress.go).
	theme := createIdea(t, pm, project, "Identity", map[string]any{"isContainer": true})
	audit := createIdea(t, pm, project, "Audit log", map[string]any{"parentUuid": theme})
	ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": audit}, nil)
	ok(t, pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": audit, "reason": "clear enough"}, nil)
	finishIdea(t, admin, pm, dev, project, audit)
	e.requireProgress(t, pm, audit, "done", "the recorded idea")
	e.requireProgress(t, pm, theme, "done", "its theme")

	// An idea assigned to an agent by an admin (chorus_pm_assign_idea), who then works it.
	assigned := createIdea(t, pm, project, "Assigned work", nil)
	ok(t, admin, "chorus_pm_assign_idea", map[string]any{"ideaUuid": assigned, "assigneeType": "agent",
		"assigneeUuid": agentUUID(t, e, "PM")}, nil)
	ok(t, pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": assigned, "reason": "clear enough"}, nil)

	batch := workflows.TaskBatchID(workflows.DerivedUUID("create-tasks", agentUUID(t, e, "Dev"), "record-1", "0"))
	day := time.Now().UTC().Format("2006-01-02")
	for _, h := range []struct{ name, id string }{
		{"idea-elaborated", vocab.IdeaID(idea)},
		{"proposal-approved-revoked", vocab.ProposalID(proposal)},
		{"task-reopened-verified", vocab.TaskID(schema)},
		{"task-claimed-released", vocab.TaskID(quick.Tasks[0].UUID)},
		{"task-batch", batch},
		{"task-lease-lapsed", vocab.TaskID(leased)},
		{"idea-moved", vocab.IdeaID(idea)},
		{"proposal-moved", vocab.ProposalID(proposal)},
		{"task-moved", vocab.TaskID(schema)},
		{"idea-progress-done", vocab.IdeaID(audit)},
		{"idea-assigned", vocab.IdeaID(assigned)},
	} {
		if only := os.Getenv("CHORUS_RECORD"); only != "" && !slices.Contains(strings.Split(only, ","), h.name) {
			continue
		}
		writeHistory(t, h.id, freeName(t, filepath.Join("..", "workflows", "testdata", "histories"), day+"-"+h.name))
	}
}

// TestRecordContinuedAsNewHistories records the run of a task workflow that continued as new
// after its claim (the server here suggests continue-as-new after a handful of events), and the
// batch that created the task: the shapes of continue-as-new waiting for the signals it took
// (workflow.GetVersion "continue-as-new-waits-for-signals") and of batch ids derived from the
// batch ("create-tasks-ids-from-batch"). CHORUS_RECORD names them task-continued-as-new and
// task-batch-ids.
func TestRecordContinuedAsNewHistories(t *testing.T) {
	tc := wftest.Dedicated(t, "limit.historyCount.suggestContinueAsNew=8")
	e := startEnv(t, "sqlite", envOptions{flows: true, temporal: tc})
	admin := e.client(e.adminKey)
	dev := e.client(e.agent("Dev", perm.DeveloperAgent))
	project := createProject(t, admin, "Apollo")
	var quick CreatedTasks
	ok(t, dev, "chorus_create_tasks", map[string]any{"projectUuid": project, "requestId": "record-can", "tasks": []map[string]any{
		{"title": "Continued", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &quick)
	id := vocab.TaskID(quick.Tasks[0].UUID)
	first := currentRun(t, e, id)
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": quick.Tasks[0].UUID}, nil)
	_ = nextRunState(t, e, id, first)
	batch := workflows.TaskBatchID(workflows.DerivedUUID("create-tasks", agentUUID(t, e, "Dev"), "record-can", "0"))
	day := time.Now().UTC().Format("2006-01-02")
	dir := filepath.Join("..", "workflows", "testdata", "histories")
	for _, h := range []struct{ name, id, run string }{
		{"task-continued-as-new", id, first},
		{"task-batch-ids", batch, ""},
	} {
		if only := os.Getenv("CHORUS_RECORD"); only != "" && !slices.Contains(strings.Split(only, ","), h.name) {
			continue
		}
		writeRunHistory(t, tc, h.id, h.run, freeName(t, dir, day+"-"+h.name))
	}
}

// freeName is dir/base.json, or dir/base-N.json with the first N from 2 whose file does not exist.
func freeName(t *testing.T, dir, base string) string {
	path := filepath.Join(dir, base+".json")
	for n := 2; ; n++ {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return path
		}
		path = filepath.Join(dir, fmt.Sprintf("%s-%d.json", base, n))
		require.Less(t, n, 1000)
	}
}

func writeHistory(t *testing.T, workflowID, path string) {
	writeRunHistory(t, wftest.Server(t).Client(), workflowID, "", path)
}

// writeRunHistory writes the history of one run ("" for the latest) of workflowID, read through
// tc, to path and adds it to SHA256SUMS.
func writeRunHistory(t *testing.T, tc client.Client, workflowID, runID, path string) {
	it := tc.GetWorkflowHistory(context.Background(), workflowID, runID, false,
		enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var hist historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&hist)
	require.NoError(t, err)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	require.NoError(t, err, "recorded histories are append-only: record under a new name")
	_, err = f.Write(b)
	require.NoError(t, errors.Join(err, f.Close()))
	sums, err := os.OpenFile(filepath.Join(filepath.Dir(path), "SHA256SUMS"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	_, err = fmt.Fprintf(sums, "%s  %s\n", hex.EncodeToString(sum[:]), filepath.Base(path))
	require.NoError(t, errors.Join(err, sums.Close()))
	t.Logf("wrote %s (%d events)", path, len(hist.Events))
}
