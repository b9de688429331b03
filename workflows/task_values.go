// The values of the activity rows task commands write: one struct per action, its fields in the
// order of their JSON names, so a value is written as it was when it was a map (keys sorted).

package workflows

import "time"

// assignedValue is the value of "assigned": a claim, or (with AgentUUID and AssignedBy) an
// assignment by another agent.
type assignedValue struct {
	AgentUUID    *string `json:"agentUuid,omitempty"`
	AssignedBy   *string `json:"assignedBy,omitempty"`
	AssigneeType string  `json:"assigneeType"`
	AssigneeUUID string  `json:"assigneeUuid"`
}

// taskUpdatedValue is the value of chorus_update_task's "updated" or "status_changed": what the
// call changed. The store adds addedDependencies and dependencyErrors.
type taskUpdatedValue struct {
	AcceptanceCriteriaReplaced bool     `json:"acceptanceCriteriaReplaced,omitempty"`
	DescriptionUpdated         bool     `json:"descriptionUpdated,omitempty"`
	Priority                   *string  `json:"priority,omitempty"`
	RemovedDependencies        int      `json:"removedDependencies,omitempty"`
	Status                     *string  `json:"status,omitempty"`
	StoryPoints                *float64 `json:"storyPoints,omitempty"`
	Title                      *string  `json:"title,omitempty"`
}

// workReportValue is the value of a work report's "comment_added"; the store adds the report.
type workReportValue struct {
	StatusUpdated *string `json:"statusUpdated"`
}

// submittedValue is the value of "submitted" with a summary.
type submittedValue struct {
	Summary string `json:"summary"`
}

// forcedValue is the value of "force_status_change": a reopen past unresolved dependencies.
type forcedValue struct {
	Force  bool   `json:"force"`
	Status string `json:"status"`
}

// claimExpiredValue is the value of "claim_expired": whose claim lapsed, from where, and when.
type claimExpiredValue struct {
	AssigneeName string    `json:"assigneeName"`
	AssigneeType string    `json:"assigneeType"`
	AssigneeUUID string    `json:"assigneeUuid"`
	ExpiredAt    time.Time `json:"expiredAt"`
	FromStatus   string    `json:"fromStatus"`
	TTLSeconds   int64     `json:"ttlSeconds"`
}

// taskCreatedValue is the value of a chorus_create_tasks task's "created".
type taskCreatedValue struct {
	ProposalUUID *string `json:"proposalUuid,omitempty"`
	QuickTask    bool    `json:"quickTask,omitempty"`
	Title        string  `json:"title"`
}
