package workflows

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
)

// Workflow inputs and results, signals and the activity inputs and results travel through
// Temporal as JSON, and recorded histories hold them as the Go field names once wrote them
// ("TaskUUID"). Their JSON tags change only the case of the field name ("taskUuid"), which
// encoding/json still matches when it decodes an old payload: a tag that changed letters would
// decode an old payload's field to its zero value, silently.

// payloadTypes are the structs that cross Temporal as payloads, with their JSON tags.
var payloadTypes = []any{
	TaskRun{}, TaskCommand{}, AssignTaskInput{}, UpdateTaskInput{}, ReportWorkInput{}, CriterionMark{}, MarkCriteriaInput{},
	SubmitInput{}, ReopenInput{}, TaskResult{}, ProposalRevoked{}, TaskFinished{},
	IdeaRun{}, CreateIdeaInput{}, IdeaCommand{}, AssignIdeaInput{}, EditIdeaInput{}, QuestionInput{}, StartElaborationInput{},
	AnswerInput{}, AnswerElaborationInput{}, SkipElaborationInput{}, IdeaResult{}, MoveIdeaInput{},
	ProposalRun{}, CreateProposalInput{}, ProposalCommand{}, DocumentDraftInput{}, TaskDraftInput{}, RemoveDraftInput{},
	ProposalResult{}, Materialized{}, MaterializedItem{},
	NewTaskSpec{}, CreateTasksInput{}, CreateTasksResult{}, WebhookDeliveryInput{},
	activities.DeliverWebhookInput{}, activities.WebhookBackoff{},
	activities.MovedSignal{}, activities.WorkflowStart{}, activities.TaskBatchStart{},
	store.TaskChange{}, store.TaskOutcome{}, store.TaskBatch{}, store.BatchDep{}, store.IdeaChange{}, store.Lineage{},
	store.Write{}, store.ProjectionConflict{},
}

// TestPayloadTagsOnlyChangeCase: every field of a payload struct has a JSON name, and the name
// is the field's own with only its case changed, so a payload recorded before the tags decodes.
func TestPayloadTagsOnlyChangeCase(t *testing.T) {
	for _, v := range payloadTypes {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || f.Anonymous {
				continue
			}
			tag, ok := f.Tag.Lookup("json")
			require.True(t, ok, "%s.%s has no json tag", typ, f.Name)
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			// A Legacy<Name> field keeps decoding the <Name> of payloads written before a change of shape.
			require.True(t, strings.EqualFold(name, strings.TrimPrefix(f.Name, "Legacy")), "%s.%s: json name %q must be the field name up to case "+
				"(old payloads wrote %q)", typ, f.Name, name, f.Name)
		}
	}
}

// An update input written before the tags (field names as Go spelled them) decodes into the
// tagged struct with every field.
func TestOldShapedPayloadDecodes(t *testing.T) {
	old := []byte(`{"Actor":{"type":"agent","uuid":"a1","name":"dev","companyUuid":"c1"},"Title":"New title",` +
		`"Description":"text","Priority":"high","StoryPoints":3,"SetCriteria":true,` +
		`"Criteria":[{"Description":"works","Required":true}],"AddDependsOn":["t2"],"RemoveDepends":["t3"],` +
		`"Status":"in_progress","SessionUUID":"s1","SessionName":"session","DescriptionSet":true}`)
	var got UpdateTaskInput
	require.NoError(t, DataConverter().FromPayload(jsonPayload(old), &got))
	want := UpdateTaskInput{Actor: Actor{Type: "agent", UUID: "a1", Name: "dev", CompanyUUID: "c1"}, Title: ptr("New title"),
		Description: ptr("text"), Priority: ptr("high"), StoryPoints: ptr(3.0), SetCriteria: true,
		Criteria: []store.CriterionDraft{{Description: "works", Required: true}}, AddDependsOn: []string{"t2"},
		RemoveDepends: []string{"t3"}, Status: ptr("in_progress"), SessionUUID: ptr("s1"), SessionName: ptr("session"),
		DescriptionSet: true}
	require.Equal(t, want, got)

	var result TaskResult
	require.NoError(t, DataConverter().FromPayload(jsonPayload([]byte(`{"UUID":"t1","Status":"done","Unchanged":true}`)), &result))
	require.Equal(t, TaskResult{UUID: "t1", Status: "done", Unchanged: true}, result)

	// New payloads are written with the tags, and read back the same.
	p, err := DataConverter().ToPayload(want)
	require.NoError(t, err)
	require.Contains(t, string(p.GetData()), `"removeDepends":["t3"]`)
	var back UpdateTaskInput
	require.NoError(t, DataConverter().FromPayload(p, &back))
	require.Equal(t, want, back)
}

func jsonPayload(b []byte) *commonpb.Payload {
	return &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: b}
}

// TestRecordedPayloadsDecodeIntoTaggedTypes reads every workflow input, update argument,
// signal and activity input and result the recorded histories hold, and decodes each into its
// tagged type refusing unknown keys: every key an old payload wrote still names a field.
func TestRecordedPayloadsDecodeIntoTaggedTypes(t *testing.T) {
	updates := updateInputs()
	workflowsIn := map[string]func() any{
		TaskWorkflowName: func() any { return new(TaskRun) }, IdeaWorkflowName: func() any { return new(IdeaRun) },
		ProposalWorkflowName: func() any { return new(ProposalRun) }, CreateTasksWorkflowName: func() any { return new(CreateTasksInput) },
	}
	signals := map[string]func() any{
		SignalProposalRevoked: func() any { return new(ProposalRevoked) }, SignalTaskFinished: func() any { return new(TaskFinished) },
		SignalEntityMoved: func() any { return new(EntityMoved) },
	}
	activityIn := map[string]func() any{
		"ApplyTaskChange": func() any { return new(store.TaskChange) }, "ApplyIdeaChange": func() any { return new(store.IdeaChange) },
		"CreateTaskBatch": func() any { return new(store.TaskBatch) }, "CreateTaskBatchAndStart": func() any { return new(activities.TaskBatchStart) },
		"ApplyProposalChange": func() any { return new(store.ProposalChange) }, "ApplyApproval": func() any { return new(store.Approval) },
		"RevokeCascade":  func() any { return new(store.ProposalChange) },
		"StartWorkflows": func() any { return new([]activities.WorkflowStart) }, "FollowMove": func() any { return new([]activities.MovedSignal) },
	}
	activityOut := map[string]func() any{
		"ApplyTaskChange": func() any { return new(store.TaskOutcome) }, "IdeaLineage": func() any { return new(store.Lineage) },
	}
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	decoded := map[string]int{}
	for _, f := range files {
		r, err := os.Open(f)
		require.NoError(t, err)
		h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
		_ = r.Close()
		require.NoError(t, err, f)
		scheduled := map[int64]string{}
		check := func(what string, make func() any, p *commonpb.Payloads) {
			if make == nil || len(p.GetPayloads()) == 0 {
				return
			}
			decodeStrict(t, f+": "+what, p.GetPayloads()[0].GetData(), make)
			decoded[what]++
		}
		for _, e := range h.GetEvents() {
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				a := e.GetWorkflowExecutionStartedEventAttributes()
				check(a.GetWorkflowType().GetName(), workflowsIn[a.GetWorkflowType().GetName()], a.GetInput())
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
				in := e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput()
				check(in.GetName(), updates[in.GetName()], in.GetArgs())
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				a := e.GetWorkflowExecutionSignaledEventAttributes()
				check(a.GetSignalName(), signals[a.GetSignalName()], a.GetInput())
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				a := e.GetActivityTaskScheduledEventAttributes()
				scheduled[e.GetEventId()] = a.GetActivityType().GetName()
				check(a.GetActivityType().GetName()+" input", activityIn[a.GetActivityType().GetName()], a.GetInput())
				legacyChange(t, f, a.GetActivityType().GetName(), a.GetInput())
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				a := e.GetActivityTaskCompletedEventAttributes()
				name := scheduled[a.GetScheduledEventId()]
				check(name+" result", activityOut[name], a.GetResult())
			}
		}
	}
	t.Logf("decoded: %v", decoded)
	for _, what := range []string{TaskWorkflowName, UpdateUpdateTask, UpdateClaimTask, UpdateCreateIdea, UpdateCreateProposal,
		"ApplyTaskChange input", "ApplyIdeaChange input", "ApplyTaskChange result", "ApplyProposalChange input",
		"ApplyApproval input", "RevokeCascade input"} {
		require.NotZero(t, decoded[what], "no recorded %s payload was decoded", what)
	}
}

// legacyChange: a change recorded before typed patches decodes into the Legacy fields the store
// still applies, so a retry of it by this worker writes what it wrote then (store
// TestApplyTaskChangeAcceptsTheOldShape, TestApplyIdeaChangeAcceptsTheOldShape); one recorded
// since (the gate histories) carries only the typed patch. No change mixes the two shapes.
func legacyChange(t *testing.T, f, activity string, p *commonpb.Payloads) {
	t.Helper()
	switch activity {
	case "ApplyTaskChange":
		var c store.TaskChange
		require.NoError(t, DataConverter().FromPayload(p.GetPayloads()[0], &c))
		require.True(t, c.LegacySet == nil || c.Patch == store.TaskPatch{}, f)
	case "ApplyIdeaChange":
		var c store.IdeaChange
		require.NoError(t, DataConverter().FromPayload(p.GetPayloads()[0], &c))
		require.True(t, c.LegacySet == nil || c.Patch == store.IdeaPatch{}, f)
	case "ApplyProposalChange", "RevokeCascade":
		var c store.ProposalChange
		require.NoError(t, DataConverter().FromPayload(p.GetPayloads()[0], &c))
		require.True(t, c.LegacySet == nil || c.Patch == store.ProposalPatch{}, f)
	case "ApplyApproval":
		var ap store.Approval
		require.NoError(t, DataConverter().FromPayload(p.GetPayloads()[0], &ap))
		if ap.Change.LegacySet != nil {
			require.Contains(t, ap.Change.LegacyColumns, "status", f)
		} else {
			require.NotNil(t, ap.Change.Patch.Status, f)
		}
	}
}

// decodeStrict decodes data into make()'s value refusing keys no field takes, and checks that
// writing the value with its tags and reading it back gives the same value.
func decodeStrict(t *testing.T, what string, data []byte, make func() any) {
	t.Helper()
	v := make()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "%s: %s", what, data)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	again := make()
	require.NoError(t, json.Unmarshal(b, again))
	require.Equal(t, v, again, what)
}

// updateInputs maps each update name to a new value of its input type.
func updateInputs() map[string]func() any {
	m := map[string]func() any{}
	add := func(name string, f func() any) { m[name] = f }
	add(CreateIdea.Name, inputOf(CreateIdea))
	add(ClaimIdea.Name, inputOf(ClaimIdea))
	add(ReleaseIdea.Name, inputOf(ReleaseIdea))
	add(AssignIdea.Name, inputOf(AssignIdea))
	add(EditIdea.Name, inputOf(EditIdea))
	add(StartElaboration.Name, inputOf(StartElaboration))
	add(AnswerElaboration.Name, inputOf(AnswerElaboration))
	add(ValidateElaboration.Name, inputOf(ValidateElaboration))
	add(SkipElaboration.Name, inputOf(SkipElaboration))
	add(DeleteIdea.Name, inputOf(DeleteIdea))
	add(MoveIdea.Name, inputOf(MoveIdea))
	add(CreateProposal.Name, inputOf(CreateProposal))
	add(AddDocumentDraft.Name, inputOf(AddDocumentDraft))
	add(AddTaskDraft.Name, inputOf(AddTaskDraft))
	add(UpdateDocumentDraft.Name, inputOf(UpdateDocumentDraft))
	add(UpdateTaskDraft.Name, inputOf(UpdateTaskDraft))
	add(RemoveDocumentDraft.Name, inputOf(RemoveDocumentDraft))
	add(RemoveTaskDraft.Name, inputOf(RemoveTaskDraft))
	add(SubmitProposal.Name, inputOf(SubmitProposal))
	add(RejectProposal.Name, inputOf(RejectProposal))
	add(ApproveProposal.Name, inputOf(ApproveProposal))
	add(CloseProposal.Name, inputOf(CloseProposal))
	add(RevokeProposal.Name, inputOf(RevokeProposal))
	add(ClaimTask.Name, inputOf(ClaimTask))
	add(ClaimNextTask.Name, inputOf(ClaimNextTask))
	add(ReleaseTask.Name, inputOf(ReleaseTask))
	add(RenewClaim.Name, inputOf(RenewClaim))
	add(AssignTask.Name, inputOf(AssignTask))
	add(UpdateTask.Name, inputOf(UpdateTask))
	add(ReportWork.Name, inputOf(ReportWork))
	add(SelfCheck.Name, inputOf(SelfCheck))
	add(SubmitForVerify.Name, inputOf(SubmitForVerify))
	add(MarkCriteria.Name, inputOf(MarkCriteria))
	add(VerifyTask.Name, inputOf(VerifyTask))
	add(ReopenTask.Name, inputOf(ReopenTask))
	add(CloseTask.Name, inputOf(CloseTask))
	add(DeleteTask.Name, inputOf(DeleteTask))
	return m
}

func inputOf[In, Out any](Command[In, Out]) func() any { return func() any { return new(In) } }
