package app

import (
	"context"
	"errors"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Claims and assignments (docs/rules.md §4.4, §4.7, §5.10).

// ClaimTask claims an open task for the caller, with the claim time to live of its project.
func (a *App) ClaimTask(ctx context.Context, r Request, taskUUID string) (TaskOutcome, error) {
	_, pv, err := a.Store.TaskAccess(ctx, r.Who.Caller, taskUUID, store.AccessEditor)
	if err != nil {
		return TaskOutcome{}, err
	}
	return outcome(send(ctx, a, r, taskUUID, workflows.ClaimTask,
		workflows.TaskCommand{Actor: r.Who.Actor(), ClaimTTL: ClaimTTL(pv), Project: pv.UUID}))
}

// AssignTaskInput names the task and the agent it is given to.
type AssignTaskInput struct {
	TaskUUID  string
	AgentUUID string
	// InstanceUUID names an agent instance; none exist yet, so any is refused.
	InstanceUUID *string
}

// AssignTask gives an open or assigned task to an agent holding task:write whose owner can edit
// the task's project.
func (a *App) AssignTask(ctx context.Context, r Request, in AssignTaskInput) (TaskOutcome, error) {
	task, pv, err := a.Store.TaskAccess(ctx, r.Who.Caller, in.TaskUUID, store.AccessEditor)
	if err != nil {
		return TaskOutcome{}, err
	}
	target, err := a.AssignableAgent(ctx, r, in.AgentUUID, perm.TaskWrite, task.ProjectUUID, "task")
	if err != nil {
		return TaskOutcome{}, err
	}
	if in.InstanceUUID != nil {
		return TaskOutcome{}, Refuse(vocab.RefusedPrecondition, "Agent instance not found")
	}
	return outcome(send(ctx, a, r, in.TaskUUID, workflows.AssignTask,
		workflows.AssignTaskInput{Actor: r.Who.Actor(), TargetUUID: target.UUID, TargetName: target.Name, ClaimTTL: ClaimTTL(pv)}))
}

// AssignableAgent finds the agent a task or an idea may be given to (docs/rules.md §4.4, §4.7):
// an agent of the caller's company that holds bit and whose owner can edit the project, so that
// it can work what it gets. Saying why not reveals nothing: the caller sees the entity. Only a
// missing agent reads "Target Agent not found"; an outage stays an outage.
func (a *App) AssignableAgent(ctx context.Context, r Request, agentUUID string, bit perm.Bit, projectUUID, entity string) (*store.Agent, error) {
	target, err := a.Store.GetAgent(ctx, r.Who.Caller.CompanyUUID, agentUUID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, Refuse(vocab.RefusedNotFound, "Target Agent not found")
	}
	if err != nil {
		return nil, err
	}
	if !perm.Effective(target.Roles, target.Permissions).Has(bit) {
		return nil, Refuse(vocab.RefusedPrecondition, "Agent %q does not have %s permission", target.Name, bit)
	}
	owner := ""
	if target.OwnerUUID != nil {
		owner = *target.OwnerUUID
	}
	targetCaller := store.Caller{CompanyUUID: target.CompanyUUID, AgentUUID: target.UUID, OwnerUUID: owner}
	_, err = a.Store.RequireProject(ctx, targetCaller, projectUUID, store.AccessEditor)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrForbidden) {
		return nil, Refuse(vocab.RefusedPrecondition, "Agent %q cannot work in this %s's project (it needs editor access "+
			"there); add its owner to the project or pick another agent", target.Name, entity)
	}
	if err != nil {
		return nil, err
	}
	return target, nil
}
