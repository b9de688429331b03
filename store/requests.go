package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// The requestId ledger (SPEC D5): one row per (agent, requestId) of a mutating tool call.

var (
	// ErrRequestMismatch: the requestId was used before for another tool or other arguments.
	ErrRequestMismatch = errors.New("requestId reused with different arguments")
	// ErrRequestRunning: a call with this requestId has started and not finished yet.
	ErrRequestRunning = errors.New("request with this requestId is still running")
)

// StaleRequestAfter is how long a "running" ledger row is honoured; after that the process that
// wrote it is presumed dead and a retry takes the row over.
const StaleRequestAfter = 3 * time.Minute

// BeginToolRequest claims (agent, requestID) for a call of tool with arguments hashed to
// argsHash. It returns (nil, nil) when the caller should run the call; the finished earlier row
// when the same call already completed; the earlier row and ErrRequestMismatch when the id was
// used for something else; and ErrRequestRunning while an identical call is in flight.
func (s *Store) BeginToolRequest(ctx context.Context, agentUUID, requestID, tool, argsHash string) (*ToolRequest, error) {
	var prior *ToolRequest
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		now := Now()
		row := ToolRequest{AgentUUID: agentUUID, RequestID: requestID, Tool: tool, ArgsHash: argsHash,
			State: "running", CreatedAt: now}
		res, err := tx.NewInsert().Model(&row).On("CONFLICT (agent_uuid, request_id) DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		var got ToolRequest
		err = tx.NewSelect().Model(&got).Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) { // released between our insert and select: claim it now
			_, err = tx.NewInsert().Model(&row).Exec(ctx)
			return mapErr(err, "request")
		}
		if err != nil {
			return err
		}
		prior = &got
		switch {
		case got.Tool != tool || got.ArgsHash != argsHash:
			return ErrRequestMismatch
		case got.State == "done":
			return nil
		case now.Sub(got.CreatedAt) < StaleRequestAfter:
			return ErrRequestRunning
		}
		prior = nil // a stale claim: take it over
		_, err = tx.NewUpdate().Model((*ToolRequest)(nil)).Set("created_at = ?", now).
			Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Exec(ctx)
		return err
	})
	if err != nil && !errors.Is(err, ErrRequestMismatch) && !errors.Is(err, ErrRequestRunning) {
		return nil, err
	}
	return prior, err
}

// FinishToolRequest stores the result of a claimed call; later retries receive it.
func (s *Store) FinishToolRequest(ctx context.Context, agentUUID, requestID string, result json.RawMessage) error {
	_, err := s.DB.NewUpdate().Model((*ToolRequest)(nil)).
		Set("state = 'done'").Set("result = ?", string(result)).
		Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Exec(ctx)
	return err
}

// AbandonToolRequest removes a claim whose call failed, so a retry runs the call again.
func (s *Store) AbandonToolRequest(ctx context.Context, agentUUID, requestID string) error {
	_, err := s.DB.NewDelete().Model((*ToolRequest)(nil)).
		Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("state = 'running'").Exec(ctx)
	return err
}
