// The gate keeper every entity workflow with a gateable command embeds: it records an agent's
// call of a gated command as awaiting a person, applies or refuses it on the person's decision,
// and expires it on a durable timer (docs/rules.md §6.7).

package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// gateSubject is the entity a gate is about, for its row and notifications.
type gateSubject struct {
	CompanyUUID, ProjectUUID, UUID, Title string
	Entity                                vocab.Entity
}

// gateKeeper holds an entity workflow's gates. gates points into the current state (the state
// is replaced by each command, so it is a function); check runs a gated command's own rules on
// the current state for the requester's input, and apply carries it out with the deciding
// person as its actor.
type gateKeeper struct {
	mu       *commandLock
	commands []string
	gates    func() *[]GateState
	subject  func() gateSubject
	check    func(command string, input json.RawMessage) error
	apply    func(ctx workflow.Context, command string, input json.RawMessage, decider Actor) error
}

// register registers request_gate and decide_gate, and starts the expiry timers of the gates
// still awaiting (a run that continued as new).
func (k *gateKeeper) register(ctx workflow.Context, recent func() *Recent, request Command[RequestGateInput, GateResult],
	decide Command[DecideGateInput, GateResult]) error {
	err := firstErr(
		registerUpdate(ctx, k.mu, recent, request, k.checkRequest, k.request),
		registerUpdate(ctx, k.mu, recent, decide, func(in DecideGateInput) error { return checkGateDecision(*k.gates(), in) }, k.decide),
	)
	for _, g := range *k.gates() {
		if g.Status == vocab.GateAwaiting && g.ExpiresAt != nil {
			k.watch(ctx, g.UUID, *g.ExpiresAt)
		}
	}
	return err
}

func (k *gateKeeper) checkRequest(in RequestGateInput) error {
	if err := checkGateRequest(*k.gates(), k.commands, in); err != nil {
		return err
	}
	return k.check(in.Command, in.Input)
}

// request records an agent's call of a gated command: the gate row (with the notification to the
// people who can decide), then the gate in the state. A repeated call answers the awaiting gate.
func (k *gateKeeper) request(ctx workflow.Context, in RequestGateInput) (GateResult, error) {
	if i := awaitingFor(*k.gates(), in.Command, in.Actor.UUID); i >= 0 {
		r := (*k.gates())[i].result()
		r.Repeated = true
		return r, nil
	}
	s, at := k.subject(), stamp(ctx)
	// From the entity, not the run's workflow id (a replayer names the run otherwise): decide_gate
	// finds the gate by this uuid.
	g := GateState{UUID: DerivedUUID(vocab.WorkflowID(s.Entity, s.UUID), "gate", workflow.GetCurrentUpdateInfo(ctx).ID),
		Command: in.Command, Input: in.Input,
		RequestedBy: in.Actor, RequestedAt: at, Status: vocab.GateAwaiting}
	if in.ExpireAfter > 0 {
		g.ExpiresAt = ptr(at.Add(in.ExpireAfter))
	}
	row := store.GateRequest{UUID: g.UUID, CompanyUUID: s.CompanyUUID, ProjectUUID: s.ProjectUUID, EntityType: string(s.Entity),
		EntityUUID: s.UUID, EntityTitle: s.Title, Command: g.Command, Input: string(g.Input), RequestedByType: in.Actor.Type,
		RequestedByUUID: in.Actor.UUID, RequestedByName: in.Actor.Name, Status: g.Status, ExpiresAt: g.ExpiresAt,
		CreatedAt: at, UpdatedAt: at}
	notify := store.NotifySpec{Seed: DerivedUUID(g.UUID, "requested"), ProjectUUID: s.ProjectUUID, Action: "gate_requested",
		EntityType: string(s.Entity), EntityUUID: s.UUID, EntityTitle: s.Title, ActorType: in.Actor.Type, ActorUUID: in.Actor.UUID,
		ActorName: in.Actor.Name, Message: fmt.Sprintf("%s asks a person to %s %q: approve or refuse it (gate %s)",
			in.Actor.Name, gateVerb(g.Command), s.Title, g.UUID),
		Recipients: []store.Recipient{{Type: "user", UUID: in.Actor.OwnerUUID}}}
	var a *activities.Activities
	if err := persist(ctx, a.RecordGate, activities.GateRecord{Gate: row, Notify: notify}).Get(ctx, nil); err != nil {
		return GateResult{}, fmt.Errorf("could not record the gate: %w", err)
	}
	*k.gates() = append(slices.Clone(*k.gates()), g)
	if g.ExpiresAt != nil {
		k.watch(ctx, g.UUID, *g.ExpiresAt)
	}
	return g.result(), nil
}

// decide applies or refuses an awaiting gate. Approving runs the command's rules again on the
// state now and carries it out with the person as its actor; a command that no longer applies
// ends the gate refused with its refusal. A failure that is no refusal (the command could not be
// saved) leaves the gate awaiting and fails the decision. A gate whose time has run out ends
// expired, whatever the decision.
func (k *gateKeeper) decide(ctx workflow.Context, in DecideGateInput) (GateResult, error) {
	g := (*k.gates())[findGate(*k.gates(), in.GateUUID)]
	if g.ExpiresAt != nil && !stamp(ctx).Before(*g.ExpiresAt) {
		// Its time ran out before the decision reached it (the timer had not fired yet).
		return k.settle(ctx, g.UUID, vocab.GateExpired, nil, "", nil)
	}
	status, note := vocab.GateRefused, in.Note
	if in.Approve {
		err := k.check(g.Command, g.Input)
		if err == nil {
			err = k.apply(ctx, g.Command, g.Input, in.Actor)
		}
		switch e, refused := FromTemporal(err).(*Error); {
		case err == nil:
			status = vocab.GateApplied
		case refused && e.Kind != KindDiverged:
			note = ptr(e.Message)
		default:
			return GateResult{}, err
		}
	}
	return k.settle(ctx, g.UUID, status, &Party{Type: in.Actor.Type, UUID: in.Actor.UUID}, in.Actor.Name, note)
}

// settle ends gate uuid at status: its row and the requester's notification, then the state.
func (k *gateKeeper) settle(ctx workflow.Context, uuid, status string, by *Party, byName string, note *string) (GateResult, error) {
	g := (*k.gates())[findGate(*k.gates(), uuid)]
	s, at := k.subject(), stamp(ctx)
	c := store.GateSettle{UUID: uuid, Status: status, Note: note, At: at}
	actor := store.NotifySpec{ActorType: "system", ActorName: "Chorus"}
	if by != nil {
		c.DecidedByUUID, c.DecidedByName = &by.UUID, &byName
		actor = store.NotifySpec{ActorType: by.Type, ActorUUID: by.UUID, ActorName: byName}
	}
	notify := store.NotifySpec{Seed: DerivedUUID(uuid, status), ProjectUUID: s.ProjectUUID, Action: "gate_" + status,
		EntityType: string(s.Entity), EntityUUID: s.UUID, EntityTitle: s.Title, ActorType: actor.ActorType,
		ActorUUID: actor.ActorUUID, ActorName: actor.ActorName, Message: gateOutcomeMessage(g.Command, s.Title, status, byName, note),
		Recipients: []store.Recipient{{Type: g.RequestedBy.Type, UUID: g.RequestedBy.UUID}}}
	var a *activities.Activities
	if err := persist(ctx, a.SettleGate, activities.GateOutcome{Settle: c, Notify: notify}).Get(ctx, nil); err != nil {
		return GateResult{}, fmt.Errorf("could not record the gate's outcome: %w", err)
	}
	g.Status, g.DecidedBy, g.DecidedAt, g.Note = status, by, &at, note
	g.Input = nil // a decided gate keeps no input: the state stays small
	*k.gates() = keepDecided(slices.Clone(*k.gates()), g)
	return g.result(), nil
}

// keepDecided puts the decided gate g in place and drops the oldest decided gates past
// maxDecidedGates.
func keepDecided(gates []GateState, g GateState) []GateState {
	gates[findGate(gates, g.UUID)] = g
	decided := 0
	for i := len(gates) - 1; i >= 0; i-- {
		if gates[i].Status != vocab.GateAwaiting {
			if decided++; decided > maxDecidedGates {
				gates = slices.Delete(gates, i, i+1)
			}
		}
	}
	return gates
}

// watch expires gate uuid at expires unless it is decided first: a durable timer, started again
// by the next run after a continue-as-new. The expiry counts as a signal being applied, so a run
// continuing as new waits for it (awaitContinueAsNew).
func (k *gateKeeper) watch(ctx workflow.Context, uuid string, expires time.Time) {
	awaiting := func() bool {
		i := findGate(*k.gates(), uuid)
		return i >= 0 && (*k.gates())[i].Status == vocab.GateAwaiting
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		if d := expires.Sub(workflow.Now(ctx)); d > 0 {
			if decided, err := workflow.AwaitWithTimeout(ctx, d, func() bool { return !awaiting() }); decided || err != nil {
				return
			}
		}
		k.mu.signals++
		defer func() { k.mu.signals-- }()
		if err := k.mu.Lock(ctx); err != nil {
			return
		}
		defer k.mu.Unlock()
		if awaiting() {
			if _, err := k.settle(ctx, uuid, vocab.GateExpired, nil, "", nil); err != nil {
				workflow.GetLogger(ctx).Error("could not expire a gate", "gate", uuid, "error", err)
			}
		}
	})
}

func gateVerb(command string) string {
	switch command {
	case vocab.GateApproveProposal:
		return "approve proposal"
	case vocab.GateVerifyTask:
		return "verify task"
	}
	return "resolve the elaboration of idea"
}

// gateOutcomeMessage is the requester's notification of how its gate ended.
func gateOutcomeMessage(command, title, status, by string, note *string) string {
	what := fmt.Sprintf("Your request to %s %q", gateVerb(command), title)
	switch status {
	case vocab.GateApplied:
		return fmt.Sprintf("%s was approved by %s and applied", what, by)
	case vocab.GateExpired:
		return what + " expired before a person decided it; call the command again to ask again"
	}
	return fmt.Sprintf("%s was refused by %s. Reason: %s", what, by, deref(note))
}
