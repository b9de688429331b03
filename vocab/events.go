package vocab

// EventKinds are the kinds of lifecycle events the event stream and webhooks carry: the
// notification actions (docs/rules.md §7.2, §7.4), in the order the rules list them.
var EventKinds = []string{
	"task_assigned", "task_claim_expired", "task_status_changed", "task_submitted_for_verify",
	"task_verified", "task_reopened", "comment_added", "mentioned", "idea_claimed",
	"elaboration_requested", "elaboration_answered", "proposal_approved", "proposal_rejected",
	"report_created", "agent_checkin", "gate_requested", "gate_applied", "gate_refused", "gate_expired",
}
