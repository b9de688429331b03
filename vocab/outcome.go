package vocab

// Outcome is how a call ended: the chorus_tool_calls_total "outcome" label.
type Outcome string

// The outcomes of a call.
const (
	OutcomeOK Outcome = "ok"
	// OutcomeRefused: a known answer that changed nothing (a RefusalKind says which). Agents
	// meet these every day.
	OutcomeRefused Outcome = "refused"
	// OutcomeError: Chorus could not give an answer (a FailureKind says why). These are the
	// operators' concern.
	OutcomeError Outcome = "error"
)

// FailureKind is why a call ended with OutcomeError: the "error_kind" label of such a call.
type FailureKind string

// The failure kinds.
const (
	// FailedStillRunning: the call's deadline passed with its outcome unknown; it may still
	// complete.
	FailedStillRunning FailureKind = "still_running"
	// FailedUnavailable: the database could not be reached.
	FailedUnavailable FailureKind = "unavailable"
	// FailedInternal: anything else, a bug or an unknown outage.
	FailedInternal FailureKind = "internal"
)
