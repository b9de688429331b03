package app

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Human gates (docs/rules.md §6.7): a project's policy names the commands that wait for a
// person when an agent calls them. The agent's call records a gate on the entity's workflow and
// answers at once that it waits; a person decides it (DecideGate), and the workflow applies or
// refuses the command and tells the agent.

// WhoMayDecide says, in the answer to an agent, who can decide its gate.
const WhoMayDecide = "a person with editor or admin access to the project (in the console, or chorus gate approve|refuse)"

// Gate is a gate request as the use cases answer it.
type Gate struct {
	store.GateRequest
	// WhoMayDecide: WhoMayDecide, for the answer to the agent.
	WhoMayDecide string
}

// Gate policy limits: a request expires after at least a minute and at most 30 days (0: never).
const (
	minGateExpiry = 60
	maxGateExpiry = 30 * 24 * 3600
)

// GatePolicyInput is a project's gate policy as a caller sets it: the gated commands (a subset
// of vocab.GateCommands; empty: none), the expiry of a request in seconds (0: never, else 60 to
// 2592000), and whether separation of duties applies.
type GatePolicyInput struct {
	Commands           []string
	ExpireAfterSeconds int
	SeparateDuties     bool
}

// CheckGatePolicy validates a policy, naming the field at fault and what it takes.
func CheckGatePolicy(in GatePolicyInput) error {
	for _, c := range in.Commands {
		if !slices.Contains(vocab.GateCommands, c) {
			return Refuse(vocab.RefusedInvalid, "Input validation error: commands: %q is not a gateable command (use %s)", c,
				strings.Join(vocab.GateCommands, ", "))
		}
	}
	if e := in.ExpireAfterSeconds; e != 0 && (e < minGateExpiry || e > maxGateExpiry) {
		return Refuse(vocab.RefusedInvalid, "Input validation error: expireAfterSeconds: %d is out of range (0 for never, else %d to %d, "+
			"which is 30 days)", e, minGateExpiry, maxGateExpiry)
	}
	return nil
}

// GatePolicy returns a project's gate policy; the caller needs to see the project.
func (a *App) GatePolicy(ctx context.Context, r Request, projectUUID string) (store.GatePolicy, error) {
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
		return store.GatePolicy{}, err
	}
	return a.Store.GatePolicyOf(ctx, projectUUID)
}

// SetGatePolicy replaces a project's gate policy; the caller needs manage_project on it
// (docs/rules.md §6.3). It returns the policy stored.
func (a *App) SetGatePolicy(ctx context.Context, r Request, projectUUID string, in GatePolicyInput) (store.GatePolicy, error) {
	if err := CheckGatePolicy(in); err != nil {
		return store.GatePolicy{}, err
	}
	pv, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer)
	if err != nil {
		return store.GatePolicy{}, err
	}
	if pv.Level() < manageLevel(pv.Visibility) {
		return store.GatePolicy{}, errProjectManage()
	}
	return a.storeGatePolicy(ctx, pv.CompanyUUID, pv.UUID, in)
}

// SetGatePolicyAsOperator replaces the gate policy of any project of the company (chorus
// project gates).
func (a *App) SetGatePolicyAsOperator(ctx context.Context, companyUUID, projectUUID string, in GatePolicyInput) (store.GatePolicy, error) {
	if err := CheckGatePolicy(in); err != nil {
		return store.GatePolicy{}, err
	}
	p, err := a.Store.CompanyProject(ctx, companyUUID, projectUUID)
	if err != nil {
		return store.GatePolicy{}, err
	}
	return a.storeGatePolicy(ctx, companyUUID, p.UUID, in)
}

func (a *App) storeGatePolicy(ctx context.Context, companyUUID, projectUUID string, in GatePolicyInput) (store.GatePolicy, error) {
	p := store.GatePolicy{ProjectUUID: projectUUID, CompanyUUID: companyUUID, ExpireAfterSeconds: in.ExpireAfterSeconds,
		SeparateDuties: in.SeparateDuties}
	p.Commands = strings.Join(store.GatePolicy{Commands: strings.Join(in.Commands, ",")}.GatedCommands(), ",")
	if err := a.Store.SetGatePolicy(ctx, p); err != nil {
		return store.GatePolicy{}, err
	}
	return a.Store.GatePolicyOf(ctx, projectUUID)
}

// gated is an agent's call of a gateable command about to be sent.
type gated struct {
	Entity      vocab.Entity
	UUID        string // the entity's
	ProjectUUID string
	Command     string // vocab.GateCommands
	// Creator and Workers feed separation of duties (workflows.SeparationOfDuties); Workers is
	// read only when the policy asks for it.
	Creator string
	Workers func(ctx context.Context) ([]string, error)
	Input   any // the command's workflow input
}

// holdForPerson applies the project's gate policy to the call g (docs/rules.md §6.7). A person
// is never held. For an agent, separation of duties refuses first when the policy asks it; then
// a gated command is recorded as a gate on the entity's workflow and returned (nil: not gated,
// send the command).
func (a *App) holdForPerson(ctx context.Context, r Request, g gated) (*Gate, error) {
	if r.Who.IsUser() {
		return nil, nil
	}
	pol, err := a.Store.GatePolicyOf(ctx, g.ProjectUUID)
	if err != nil {
		return nil, err
	}
	if pol.SeparateDuties {
		var workers []string
		if g.Workers != nil {
			if workers, err = g.Workers(ctx); err != nil {
				return nil, err
			}
		}
		if err := workflows.SeparationOfDuties(g.Command, r.Who.Caller.AgentUUID, g.Creator, workers); err != nil {
			return nil, err
		}
	}
	if !pol.Gates(g.Command) {
		return nil, nil
	}
	input, err := json.Marshal(g.Input)
	if err != nil {
		return nil, err
	}
	request, _, _ := workflows.GateCommands(g.Entity)
	res, err := workflows.Send(ctx, a.Flows, request, g.UUID, r.Flow(), r.Who.Caller.AgentUUID, workflows.RequestGateInput{
		Actor: r.Who.Actor(), Command: g.Command, Input: input, ExpireAfter: time.Duration(pol.ExpireAfterSeconds) * time.Second})
	if err != nil {
		return nil, err
	}
	row, err := a.Store.Gate(ctx, r.Who.Caller.CompanyUUID, res.UUID)
	if err != nil {
		return nil, err
	}
	return &Gate{GateRequest: *row, WhoMayDecide: WhoMayDecide}, nil
}

// ListGates lists the gates of the projects the caller can see, newest first, narrowed by
// filter (a project the caller cannot see is not found; a status must be one of
// vocab.GateStatuses).
func (a *App) ListGates(ctx context.Context, r Request, filter store.GateFilter) ([]Gate, error) {
	if filter.Status != "" && !slices.Contains(vocab.GateStatuses, filter.Status) {
		return nil, Refuse(vocab.RefusedInvalid, "Input validation error: status: %q is not a gate status (use %s)", filter.Status,
			strings.Join(vocab.GateStatuses, ", "))
	}
	if filter.ProjectUUID != "" {
		if _, err := a.Store.RequireProject(ctx, r.Who.Caller, filter.ProjectUUID, store.AccessViewer); err != nil {
			return nil, err
		}
	}
	rows, err := a.Store.ListGateRequests(ctx, r.Who.Caller, false, filter)
	if err != nil {
		return nil, err
	}
	out := make([]Gate, len(rows))
	for i, g := range rows {
		out[i] = Gate{GateRequest: g, WhoMayDecide: WhoMayDecide}
	}
	return out, nil
}

// GetGate returns a gate of a project the caller can see ("Gate not found" otherwise).
func (a *App) GetGate(ctx context.Context, r Request, gateUUID string) (Gate, error) {
	g, err := a.gateAccess(ctx, r, gateUUID, store.AccessViewer)
	if err != nil {
		return Gate{}, err
	}
	return Gate{GateRequest: *g, WhoMayDecide: WhoMayDecide}, nil
}

// gateAccess finds a gate whose project the caller sees at level need: hidden is "Gate not
// found", too low "Insufficient project access".
func (a *App) gateAccess(ctx context.Context, r Request, gateUUID string, need store.Access) (*store.GateRequest, error) {
	g, err := a.Store.Gate(ctx, r.Who.Caller.CompanyUUID, gateUUID)
	if err != nil {
		return nil, err
	}
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, g.ProjectUUID, need); err != nil {
		var nf *store.NotFoundError
		if errors.As(err, &nf) {
			return nil, store.NotFound("Gate")
		}
		return nil, err
	}
	return g, nil
}

// DecideGate is a person's decision on an awaiting gate (docs/rules.md §6.7): approve applies
// the command with the person as its actor, running the command's rules again (a command that
// no longer applies ends the gate refused with its refusal); refusing needs a note. Only a
// person with editor access or better decides; a gate is decided once (a second decision is
// refused), and a retried call with the same requestId returns the first outcome. It returns
// the gate as it ended.
func (a *App) DecideGate(ctx context.Context, r Request, gateUUID string, approve bool, note string) (Gate, error) {
	if !r.Who.IsUser() {
		return Gate{}, Refuse(vocab.RefusedForbidden, "Only a person can decide a gate: agents ask, people decide (docs/rules.md §6.7)")
	}
	g, err := a.gateAccess(ctx, r, gateUUID, store.AccessEditor)
	if err != nil {
		return Gate{}, err
	}
	in := workflows.DecideGateInput{Actor: r.Who.Actor(), GateUUID: g.UUID, Approve: approve}
	if n := strings.TrimSpace(note); n != "" {
		in.Note = &n
	}
	_, decide, _ := workflows.GateCommands(vocab.Entity(g.EntityType))
	if _, err := workflows.Send(ctx, a.Flows, decide, g.EntityUUID, r.Flow(), r.Who.Caller.AgentUUID, in); err != nil {
		if workflows.IsKind(err, workflows.KindNotFound) && g.Status != vocab.GateAwaiting {
			return Gate{}, workflows.GateAlreadyDecided(g.Status) // the workflow no longer keeps it; its row does
		}
		return Gate{}, err
	}
	return a.GetGate(ctx, r, g.UUID)
}
