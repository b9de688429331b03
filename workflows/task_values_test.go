package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The typed activity values write the bytes the maps they replaced wrote (keys sorted, the same
// keys present): activity rows read the same before and after.
func TestActivityValuesWriteWhatTheMapsWrote(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		typed any
		old   any
	}{
		{assignedValue{AssigneeType: "agent", AssigneeUUID: "a1"}, map[string]any{"assigneeType": "agent", "assigneeUuid": "a1"}},
		{assignedValue{AssigneeType: "agent", AssigneeUUID: "a1", AgentUUID: ptr("a1"), AssignedBy: ptr("pm")},
			map[string]any{"assigneeType": "agent", "assigneeUuid": "a1", "agentUuid": "a1", "assignedBy": "pm"}},
		{taskUpdatedValue{Title: ptr("t"), DescriptionUpdated: true, Priority: ptr("high"), StoryPoints: ptr(0.0),
			AcceptanceCriteriaReplaced: true, Status: ptr("in_progress"), RemovedDependencies: 2},
			map[string]any{"title": "t", "descriptionUpdated": true, "priority": "high", "storyPoints": 0.0,
				"acceptanceCriteriaReplaced": true, "status": "in_progress", "removedDependencies": 2}},
		{taskUpdatedValue{Priority: ptr("low")}, map[string]any{"priority": "low"}},
		{workReportValue{}, map[string]any{"statusUpdated": (*string)(nil)}},
		{workReportValue{StatusUpdated: ptr("done")}, map[string]any{"statusUpdated": ptr("done")}},
		{submittedValue{Summary: "s"}, map[string]string{"summary": "s"}},
		{forcedValue{Force: true, Status: "in_progress"}, map[string]any{"status": "in_progress", "force": true}},
		{claimExpiredValue{AssigneeType: "agent", AssigneeUUID: "a1", AssigneeName: "", FromStatus: "assigned", TTLSeconds: 600, ExpiredAt: at},
			map[string]any{"assigneeType": "agent", "assigneeUuid": "a1", "assigneeName": "", "fromStatus": "assigned",
				"ttlSeconds": int64(600), "expiredAt": at}},
		{taskCreatedValue{Title: "t", ProposalUUID: ptr("p1")}, map[string]any{"title": "t", "proposalUuid": "p1"}},
		{taskCreatedValue{Title: "t", QuickTask: true}, map[string]any{"title": "t", "quickTask": true}},
		{assignedValue{AssigneeType: "agent", AssigneeUUID: "a1", AssignedBy: ptr("pm")},
			map[string]string{"assigneeType": "agent", "assigneeUuid": "a1", "assignedBy": "pm"}},
		{reparentedValue{ToParentUUID: ptr("p")}, map[string]*string{"fromParentUuid": nil, "toParentUuid": ptr("p")}},
		{editedValue{ChangedFields: []string{"title", "content"}}, map[string][]string{"changedFields": {"title", "content"}}},
		{elaborationStartedValue{Depth: "standard", QuestionCount: 3, RoundNumber: 1},
			map[string]any{"depth": "standard", "questionCount": 3, "roundNumber": 1}},
		{elaborationAnsweredValue{RoundNumber: 2, AnsweredCount: 4}, map[string]int{"roundNumber": 2, "answeredCount": 4}},
		{elaborationResolvedValue{TotalRounds: 2}, map[string]int{"totalRounds": 2}},
		{elaborationSkippedValue{Reason: "clear"}, map[string]string{"reason": "clear"}},
		{reviewedValue{}, map[string]any{"reviewNote": (*string)(nil)}},
		{reviewedValue{ReviewNote: ptr("ok")}, map[string]any{"reviewNote": ptr("ok")}},
	}
	for _, c := range cases {
		typed, err := json.Marshal(c.typed)
		require.NoError(t, err)
		old, err := json.Marshal(c.old)
		require.NoError(t, err)
		require.Equal(t, string(old), string(typed))
	}
}
