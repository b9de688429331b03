package vocab

// RefusalKind is the class of a refusal: a known answer that changed nothing. It is the
// chorus_refusals_total "kind" label and decides how a front end words the answer.
type RefusalKind string

// The refusal kinds of a use case.
const (
	// RefusedInvalid: bad input; the message names the field and the fix.
	RefusedInvalid RefusalKind = "invalid_input"
	// RefusedNotFound: the entity does not exist or the caller may not see it.
	RefusedNotFound RefusalKind = "not_found"
	// RefusedForbidden: the caller may see the entity but not do this.
	RefusedForbidden RefusalKind = "forbidden"
	// RefusedPrecondition: the request is well formed but a rule of the current state refuses it.
	RefusedPrecondition RefusalKind = "precondition"
	// RefusedConflict: an illegal transition for the entity's current status.
	RefusedConflict RefusalKind = "conflict"
	// RefusedDiverged: the entity's row and its workflow disagree; an operator must repair it.
	RefusedDiverged RefusalKind = "diverged"
	// RefusedAlreadyApplied: a retried command was carried out before and its result is gone.
	RefusedAlreadyApplied RefusalKind = "already_applied"
	// RefusedRolledBack: a retried command was applied, then rolled back by chorus ops repair.
	RefusedRolledBack RefusalKind = "rolled_back"
)
