package vocab

// The commands a project's gate policy can hold for a person (docs/rules.md §6.7), by the names
// the policy, the gate rows and the CLI use.
const (
	GateApproveProposal    = "approve_proposal"
	GateVerifyTask         = "verify_task"
	GateResolveElaboration = "resolve_elaboration"
)

// GateCommands lists the gateable commands in the order the docs name them.
var GateCommands = []string{GateApproveProposal, GateVerifyTask, GateResolveElaboration}

// The statuses of a gate request: it awaits a person, then ends applied, refused or expired.
const (
	GateAwaiting = "awaiting"
	GateApplied  = "applied"
	GateRefused  = "refused"
	GateExpired  = "expired"
)

// GateStatuses lists every gate status.
var GateStatuses = []string{GateAwaiting, GateApplied, GateRefused, GateExpired}
