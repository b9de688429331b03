package workflows

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestReplayRecordedHistories replays every history under testdata/histories against the
// current workflow code. A change that alters the commands a workflow issues for an existing
// history fails here: guard it with workflow.GetVersion, then re-record the histories
// (go test -tags record ./mcp -run TestRecordWorkflowHistories).
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range files {
		seen[strings.SplitN(filepath.Base(f), "-", 2)[0]] = true
	}
	for _, kind := range []string{"idea", "proposal", "task"} {
		require.True(t, seen[kind], "no recorded %s history in testdata/histories", kind)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(IdeaWorkflow, workflow.RegisterOptions{Name: IdeaWorkflowName})
			r.RegisterWorkflowWithOptions(ProposalWorkflow, workflow.RegisterOptions{Name: ProposalWorkflowName})
			r.RegisterWorkflowWithOptions(TaskWorkflow, workflow.RegisterOptions{Name: TaskWorkflowName})
			r.RegisterWorkflowWithOptions(CreateTasksWorkflow, workflow.RegisterOptions{Name: CreateTasksWorkflowName})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
