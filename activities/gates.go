package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/chorus-dev/chorus/store"
)

// GateRecord is RecordGate's input: the gate request and the notification to the people who can
// decide it.
type GateRecord struct {
	Gate   store.GateRequest `json:"gate"`
	Notify store.NotifySpec  `json:"notify"`
}

// RecordGate writes a gate request and tells the people who can decide it (docs/rules.md §6.7).
func (a *Activities) RecordGate(ctx context.Context, in GateRecord) error {
	return outcome(a.Store.RecordGate(ctx, in.Gate, in.Notify))
}

// GateOutcome is SettleGate's input: how the gate ended and the notification to its requester.
type GateOutcome struct {
	Settle store.GateSettle `json:"settle"`
	Notify store.NotifySpec `json:"notify"`
}

// SettleGate writes how a gate request ended and tells its requester. A request some other
// writer ended differently is a final conflict.
func (a *Activities) SettleGate(ctx context.Context, in GateOutcome) error {
	err := a.Store.SettleGate(ctx, in.Settle, in.Notify)
	if errors.Is(err, store.ErrConflict) {
		return temporal.NewNonRetryableApplicationError(err.Error(), "chorus.Conflict", nil)
	}
	return outcome(err)
}
