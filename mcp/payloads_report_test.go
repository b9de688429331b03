package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/proto"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
)

// The largest work report a call may carry (512 KiB of arguments as JSON)
// passes through its task's workflow in payloads that each stay well below Temporal's 2 MB
// payload limit, whose breach would terminate the workflow: the report travels once in the
// update and once in the write's activity input (docs/write-path.md, "Bounded state and
// payloads"), not three times (comment, activity value, mention text). It is stored whole, in the
// comment and in the activity row's value.
func TestLargestReportKeepsPayloadsWellBelowTheLimit(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := newFlowEnv(t, dialect)
			ctx := context.Background()
			admin := e.client(e.adminKey)
			project := createProject(t, admin, "Apollo")
			task := createTask(t, admin, project)
			ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)

			head := "Done, see " + mention("Owner", "user", e.owner) + ": "
			args := map[string]any{"taskUuid": task, "requestId": "report", "report": head}
			b, err := json.Marshal(args)
			require.NoError(t, err)
			// U+2028 is written as \u2028 in JSON, six bytes a character: the most bytes a report of
			// at most 100,000 characters can take, so the call's 512 KiB budget is what bounds it.
			report := head + strings.Repeat("\u2028", (maxCallBytes-len(b))/6)
			args["report"] = report
			ok(t, admin, "chorus_report_work", args, nil)
			over := map[string]any{"taskUuid": task, "requestId": "over!!", "report": report + "\u2028"}
			require.Contains(t, fails(t, admin, "chorus_report_work", over), "one call may carry at most 524288",
				"the report was the largest a call may carry")

			var largest int
			it := e.tc.GetWorkflowHistory(ctx, vocab.TaskID(task), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				require.NoError(t, err)
				largest = max(largest, proto.Size(ev))
			}
			require.Greater(t, largest, len(report), "the report went through the workflow")
			require.Less(t, largest, 1<<20, "every event, and so every payload, stays within half of the 2 MB limit")

			var comment store.Comment
			require.NoError(t, e.st.DB.NewSelect().Model(&comment).Where("target_uuid = ?", task).Scan(ctx))
			require.Equal(t, report, comment.Content)
			var act store.Activity
			require.NoError(t, e.st.DB.NewSelect().Model(&act).Where("target_uuid = ?", task).Where("action = 'comment_added'").Scan(ctx))
			var value map[string]any
			require.NoError(t, json.Unmarshal(act.Value, &value))
			require.Equal(t, report, value["report"])
			require.Contains(t, value, "statusUpdated")
			n, err := e.st.DB.NewSelect().Model((*store.Mention)(nil)).Where("source_uuid = ?", comment.UUID).Count(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, n, "the report's mention is recorded from the comment")
			e.requireAgreement()
		})
	}
}
