// The values of the activity rows idea and proposal commands write: one struct per action, its
// fields in the order of their JSON names, so a value is written as it was when it was a map
// (keys sorted). A claim or an assignment writes assignedValue, as a task's does.

package workflows

// reparentedValue is the value of "reparented": the idea's parent before and after (nil: none).
type reparentedValue struct {
	FromParentUUID *string `json:"fromParentUuid"`
	ToParentUUID   *string `json:"toParentUuid"`
}

// editedValue is the value of "edited": the fields the edit changed.
type editedValue struct {
	ChangedFields []string `json:"changedFields"`
}

// elaborationStartedValue is the value of "elaboration_started".
type elaborationStartedValue struct {
	Depth         string `json:"depth"`
	QuestionCount int    `json:"questionCount"`
	RoundNumber   int    `json:"roundNumber"`
}

// elaborationAnsweredValue is the value of "elaboration_answered".
type elaborationAnsweredValue struct {
	AnsweredCount int `json:"answeredCount"`
	RoundNumber   int `json:"roundNumber"`
}

// elaborationResolvedValue is the value of "elaboration_resolved".
type elaborationResolvedValue struct {
	TotalRounds int `json:"totalRounds"`
}

// elaborationSkippedValue is the value of "elaboration_skipped".
type elaborationSkippedValue struct {
	Reason string `json:"reason"`
}

// reviewedValue is the value of a proposal's "rejected_to_draft", "closed" and (with a note)
// "approved": the reviewer's note, nil for none.
type reviewedValue struct {
	ReviewNote *string `json:"reviewNote"`
}
