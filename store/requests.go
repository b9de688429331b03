package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
)

// The requestId ledger (docs/rules.md §8.5; docs/write-path.md, "Exactly once"): one row per (agent,
// requestId) of a mutating tool call. It holds what the key was first used for, the result of
// the call once it succeeded, and the key's generation, which moves on each time a call with it
// is refused, so that only an executed call's result is ever kept.

// ErrRequestMismatch: the requestId was used before for another tool or other arguments.
var ErrRequestMismatch = errors.New("requestId reused with different arguments")

// BeginToolRequest registers (agent, requestID) for a call of tool with arguments hashed to
// argsHash, or finds it registered. It returns the ledger row: a "done" row carries the result
// to return; otherwise the call runs with the row's Generation. A row made for another tool or
// other arguments is returned with ErrRequestMismatch. Twin calls both run with the same
// generation; what they run is idempotent for it (the same update id, the same derived ids).
func (s *Store) BeginToolRequest(ctx context.Context, agentUUID, requestID, tool, argsHash string) (*ToolRequest, error) {
	row := ToolRequest{AgentUUID: agentUUID, RequestID: requestID, Tool: tool, ArgsHash: argsHash, State: "running",
		CreatedAt: Now()}
	res, err := s.DB.NewInsert().Model(&row).On("CONFLICT (agent_uuid, request_id) DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, err
	}
	var got ToolRequest
	if err := s.DB.NewSelect().Model(&got).Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Scan(ctx); err != nil {
		return nil, mapErr(err, "request")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		got.Existed = true
	}
	if got.Tool != tool || got.ArgsHash != argsHash {
		return &got, ErrRequestMismatch
	}
	return &got, nil
}

// FinishToolRequest stores the result of the call made with generation; later calls with the
// key receive it.
func (s *Store) FinishToolRequest(ctx context.Context, agentUUID, requestID string, generation int, result json.RawMessage) error {
	_, err := s.DB.NewUpdate().Model((*ToolRequest)(nil)).
		Set("state = 'done'").Set("result = ?", string(result)).
		Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("generation = ?", generation).Exec(ctx)
	return err
}

// RefuseToolRequest records that the call made with generation was refused and changed
// nothing: the key moves to the next generation, so a retry after the state changed runs the
// command again instead of receiving the refusal.
func (s *Store) RefuseToolRequest(ctx context.Context, agentUUID, requestID string, generation int) error {
	_, err := s.DB.NewUpdate().Model((*ToolRequest)(nil)).Set("generation = generation + 1").
		Where("agent_uuid = ?", agentUUID).Where("request_id = ?", requestID).Where("generation = ?", generation).
		Where("state = 'running'").Exec(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}
