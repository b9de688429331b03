package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// The requestId ledger (docs/rules.md §8.5; docs/write-path.md, "Exactly once"): one row per (agent,
// requestId) of a mutating tool call. It holds what the key was first used for, the result of
// the call once it succeeded, the key's generation, which moves on each time a call with it is
// refused, so that only an executed call's result is ever kept, and the lease of the call that
// runs it now, so that twin calls (the same requestId sent again while the first is still
// running, from any API process) wait for the first call's outcome instead of running beside it.

// ErrRequestMismatch: the requestId was used before for another tool or other arguments.
var ErrRequestMismatch = errors.New("requestId reused with different arguments")

// ErrRequestInProgress: another call with the same requestId is still running and the caller's
// deadline passed while waiting for its outcome. Errors carrying it also match the context's
// error (context.DeadlineExceeded or context.Canceled).
var ErrRequestInProgress = errors.New("a call with this requestId is still in progress")

// requestLease is how long a call holds its ledger row without renewing it: a twin waits at
// most this long after the holder died before it runs the call itself. The holder renews it
// every requestLease/4 while it runs.
const requestLease = 10 * time.Second

// requestPoll bounds the pause between two looks of a waiting twin at the ledger row.
const requestPoll = 250 * time.Millisecond

// BeginToolRequest registers (agent, requestID) for a call of tool with arguments hashed to
// argsHash, or finds it registered, and returns the ledger row (docs/write-path.md, "Exactly
// once"):
//
//   - a "done" row carries the result to return: the call must not run again;
//   - a "running" row is the caller's to run, under the row's Generation: the caller now holds
//     the row's lease;
//   - a row made for another tool or other arguments comes back with ErrRequestMismatch, unless
//     the only calls made with it were refused as invalid input (ReleaseToolRequest): then this
//     call takes it over.
//
// While another live call holds the lease (a twin sent in parallel, from this process or
// another), BeginToolRequest waits, looking at the row every 20-250 ms, until that call's
// outcome is known: it succeeded (the done row is returned), it was refused (the key moved to
// its next generation, which this caller then runs), or it let its lease lapse (it crashed, or
// ended with an unknown outcome: this caller runs the same generation, whose work is idempotent
// for it). If ctx ends first, the error matches ErrRequestInProgress and ctx.Err().
//
// The lease lasts as long as ctx and never past ctx's deadline: it is renewed in the background
// every 2.5 s (requestLease/4) and cleared when ctx ends, so the caller must cancel ctx once the
// call is over. FinishToolRequest and RefuseToolRequest clear it at once. Leases compare the
// clocks of the API processes, which must agree to well within requestLease (10 s).
func (s *Store) BeginToolRequest(ctx context.Context, agentUUID, requestID, tool, argsHash string) (*ToolRequest, error) {
	holder := NewUUID()
	pause := 20 * time.Millisecond
	for waited := false; ; waited = true {
		row, err := s.claimToolRequest(ctx, agentUUID, requestID, tool, argsHash, holder)
		if err != nil && waited && ctx.Err() != nil {
			// The deadline passed during a later attempt's query rather than between attempts:
			// the caller was still waiting for the live call, so it is told the same.
			return nil, fmt.Errorf("%w: %w", ErrRequestInProgress, ctx.Err())
		}
		if err != nil || row != nil {
			if err == nil && row.State == "running" {
				s.holdToolRequest(ctx, agentUUID, requestID, holder)
			}
			return row, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrRequestInProgress, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(pause*3/2, requestPoll)
	}
}

// claimToolRequest makes one attempt of BeginToolRequest: it returns the row when the call
// should not wait (done, mismatched, or now held by holder), and nil, nil while another live
// call holds it.
func (s *Store) claimToolRequest(ctx context.Context, agentUUID, requestID, tool, argsHash, holder string) (*ToolRequest, error) {
	now := Now()
	until := leaseEnd(ctx, now)
	row := ToolRequest{AgentUUID: agentUUID, RequestID: requestID, Tool: tool, ArgsHash: argsHash, State: "running",
		CreatedAt: now, RunningUntil: &until, RunningBy: &holder}
	res, err := s.DB.NewInsert().Model(&row).On("CONFLICT (agent_uuid, request_id) DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return &row, nil
	}
	var got ToolRequest
	if err := s.DB.NewSelect().Model(&got).Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Scan(ctx); err != nil {
		return nil, mapErr(err, "request")
	}
	got.Existed = true
	if got.Tool == "" && got.State == "running" {
		// Released by a call refused as invalid input (ReleaseToolRequest): bound to no call,
		// so this one takes it with its own tool and arguments, unless a live call holds it.
		if got.RunningUntil != nil && got.RunningUntil.After(now) {
			return nil, nil
		}
		res, err = s.DB.NewUpdate().Model((*ToolRequest)(nil)).Set("tool = ?", tool).Set("args_hash = ?", argsHash).
			Set("running_until = ?", until).Set("running_by = ?", holder).
			Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("state = 'running'").
			Where("tool = ''").Where("generation = ?", got.Generation).
			Where("running_until IS NULL OR running_until <= ?", now).Exec(ctx)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			got.Tool, got.ArgsHash, got.RunningUntil, got.RunningBy = tool, argsHash, &until, &holder
			return &got, nil
		}
		return nil, nil // another call took it first: look again
	}
	if got.Tool != tool || got.ArgsHash != argsHash {
		return &got, ErrRequestMismatch
	}
	if got.State == "done" {
		return &got, nil
	}
	if got.RunningUntil != nil && got.RunningUntil.After(now) {
		return nil, nil // a live call holds it: wait
	}
	// Nobody holds it (the holder was refused, ended without an outcome, or died): take it,
	// unless another twin takes it first.
	res, err = s.DB.NewUpdate().Model((*ToolRequest)(nil)).Set("running_until = ?", until).Set("running_by = ?", holder).
		Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("state = 'running'").
		Where("generation = ?", got.Generation).Where("running_until IS NULL OR running_until <= ?", now).Exec(ctx)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		got.RunningUntil, got.RunningBy = &until, &holder
		return &got, nil
	}
	return nil, nil
}

// leaseEnd is when a lease taken or renewed at now lapses: requestLease later, or ctx's
// deadline if that comes first.
func leaseEnd(ctx context.Context, now time.Time) time.Time {
	until := now.Add(requestLease)
	if dl, ok := ctx.Deadline(); ok && dl.Before(until) {
		until = dl.UTC().Truncate(time.Microsecond)
	}
	return until
}

// holdToolRequest keeps holder's lease on the row alive while ctx lasts, and clears it when ctx
// ends (unless the row was finished, refused or taken over meanwhile).
func (s *Store) holdToolRequest(ctx context.Context, agentUUID, requestID, holder string) {
	context.AfterFunc(ctx, func() {
		bg, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = s.DB.NewUpdate().Model((*ToolRequest)(nil)).Set("running_until = NULL").Set("running_by = NULL").
			Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("state = 'running'").
			Where("running_by = ?", holder).Exec(bg)
	})
	go func() {
		tick := time.NewTicker(requestLease / 4)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			res, err := s.DB.NewUpdate().Model((*ToolRequest)(nil)).Set("running_until = ?", leaseEnd(ctx, Now())).
				Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("state = 'running'").
				Where("running_by = ?", holder).Exec(ctx)
			if err == nil {
				if n, _ := res.RowsAffected(); n == 0 {
					return // finished, refused or taken over: nothing left to hold
				}
			}
		}
	}()
}

// FinishToolRequest stores the result of the call made with generation and releases its lease;
// later calls with the key receive it. When twins ran the same generation (a lease lapsed), the
// first result stored is kept.
func (s *Store) FinishToolRequest(ctx context.Context, agentUUID, requestID string, generation int, result json.RawMessage) error {
	_, err := s.DB.NewUpdate().Model((*ToolRequest)(nil)).
		Set("state = 'done'").Set("result = ?", string(result)).Set("running_until = NULL").Set("running_by = NULL").
		Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("generation = ?", generation).
		Where("state = 'running'").Exec(ctx)
	return err
}

// ReleaseToolRequest records that the call made with generation was refused as invalid input,
// before anything ran: the key moves to the next generation, its lease is released, and it is
// bound to no call any more, so the next call with it runs whatever its tool and arguments
// (the corrected call; docs/rules.md §8.5). A key that a call with it has run stays bound.
func (s *Store) ReleaseToolRequest(ctx context.Context, agentUUID, requestID string, generation int) error {
	_, err := s.DB.NewUpdate().Model((*ToolRequest)(nil)).Set("generation = generation + 1").
		Set("tool = ''").Set("args_hash = ''").Set("running_until = NULL").Set("running_by = NULL").
		Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("generation = ?", generation).
		Where("state = 'running'").Exec(ctx)
	return err
}

// RefuseToolRequest records that the call made with generation was refused and changed
// nothing: the key moves to the next generation and its lease is released, so a waiting twin,
// or a retry after the state changed, runs the command again instead of receiving the refusal.
func (s *Store) RefuseToolRequest(ctx context.Context, agentUUID, requestID string, generation int) error {
	_, err := s.DB.NewUpdate().Model((*ToolRequest)(nil)).Set("generation = generation + 1").
		Set("running_until = NULL").Set("running_by = NULL").
		Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("generation = ?", generation).
		Where("state = 'running'").Exec(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}

// RolledBackResult is the ledger's result of a call whose command chorus ops repair rolled back
// (RowRepair.Undo): a retry with its requestId is told so (workflows.ErrRolledBack) instead of
// getting the answer of a command that is no longer in effect. No tool's result is this object.
const RolledBackResult = `{"chorus":"rolled back"}`

// markRolledBack records, in a repair's transaction, that the command of the workflow update
// updateID ("<tool>/<agent>/<requestId>/<generation>", docs/write-path.md "Exactly once") was
// rolled back: its ledger row, if the call had a requestId, answers RolledBackResult from now on.
// Update ids of calls without a requestId ("call/...") name no ledger row.
func markRolledBack(ctx context.Context, tx bun.Tx, updateID string) error {
	tool, rest, ok := strings.Cut(updateID, "/")
	if !ok || tool == "call" {
		return nil
	}
	agent, rest, ok := strings.Cut(rest, "/")
	i := strings.LastIndex(rest, "/")
	if !ok || i < 0 {
		return nil
	}
	generation, err := strconv.Atoi(rest[i+1:])
	if err != nil {
		return nil
	}
	_, err = tx.NewUpdate().Model((*ToolRequest)(nil)).Set("state = 'done'").Set("result = ?", RolledBackResult).
		Set("running_until = NULL").Set("running_by = NULL").Where("agent_uuid = ?", agent).Where("request_id = ?", rest[:i]).
		Where("tool = ?", tool).Where("generation = ?", generation).Exec(ctx)
	return err
}
