package store

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// Bounded growth (docs/write-path.md, "Bounded growth"): the tables that make retries exactly
// once grow with every call, so each keeps its rows for a window and no longer.

// Retention is how long each table keeps a row.
type Retention struct {
	// Requests is the requestId ledger's window (tool_requests): a retry with a requestId within
	// it gets the first call's outcome; after it, the requestId starts afresh. At least 7 days in
	// production (DefaultRetention).
	Requests time.Duration
	// Journal is the change journal's (change_journal): at least Requests, the Temporal
	// namespace's retention and the reset horizon (how far back an operator may reset a
	// workflow). Each row's latest entry is kept whatever its age: repair and a reset's
	// re-application ask the journal about the change a row holds now.
	Journal time.Duration
	// ClaimAttempts is how long a chorus_claim_next_task attempt (claim_next_attempts) is kept
	// once its call finished (its ledger row is done, or gone); an unfinished call's attempt is
	// kept for Requests, since its retry asks for it. Lapsed claim reservations go at once.
	ClaimAttempts time.Duration
	// Events is how long events (GET /api/events, webhooks) are kept for a client to resume
	// from; zero means Requests. The newest event is always kept, so numbering never restarts.
	Events time.Duration
}

// DefaultRetention is what chorus serve and chorus dev keep unless configured otherwise
// (CHORUS_REQUEST_RETENTION, CHORUS_JOURNAL_RETENTION).
var DefaultRetention = Retention{Requests: 7 * 24 * time.Hour, Journal: 30 * 24 * time.Hour, ClaimAttempts: 10 * time.Minute}

// Pruned counts the rows one pruning deleted, per table, and says whether it stopped before the
// end (More: its context was about to end; the next run goes on).
type Pruned struct {
	Requests          int  `json:"requests"`
	Journal           int  `json:"journal"`
	ClaimAttempts     int  `json:"claimAttempts"`
	ClaimReservations int  `json:"claimReservations"`
	Events            int  `json:"events"`
	Deliveries        int  `json:"deliveries"`
	More              bool `json:"more,omitempty"`
}

// PruneBatch is how many rows one pruning statement deletes: small enough that each is a short
// transaction beside live writes on either database.
const PruneBatch = 500

// Prune deletes, oldest first and PruneBatch rows a statement, the rows past r's windows as of
// now: ledger rows created before now-r.Requests, journal entries applied before now-r.Journal
// that are not their row's latest, finished claim attempts older than r.ClaimAttempts (any older
// than r.Requests), lapsed claim reservations, and numbered events older than r.Events but the
// newest, and webhook deliveries delivered or dead for longer than r.Journal. It stops early, with More set, when ctx has
// less than 5 s left.
func (s *Store) Prune(ctx context.Context, r Retention, now time.Time) (Pruned, error) {
	var out Pruned
	jobs := []struct {
		count *int
		query string
		args  []any
	}{
		{&out.Requests, `DELETE FROM tool_requests WHERE (agent_uuid, request_id) IN (SELECT agent_uuid, request_id
			FROM tool_requests WHERE created_at < ? ORDER BY created_at LIMIT ?)`, []any{now.Add(-r.Requests)}},
		{&out.Journal, `DELETE FROM change_journal WHERE (change_id, entity_uuid) IN (SELECT j.change_id, j.entity_uuid
			FROM change_journal AS j WHERE j.applied_at < ?
			AND NOT EXISTS (SELECT 1 FROM ideas AS x WHERE x.uuid = j.entity_uuid AND x.change_id = j.change_id)
			AND NOT EXISTS (SELECT 1 FROM proposals AS x WHERE x.uuid = j.entity_uuid AND x.change_id = j.change_id)
			AND NOT EXISTS (SELECT 1 FROM tasks AS x WHERE x.uuid = j.entity_uuid AND x.change_id = j.change_id)
			ORDER BY j.applied_at LIMIT ?)`, []any{now.Add(-r.Journal)}},
		{&out.ClaimAttempts, `DELETE FROM claim_next_attempts WHERE (agent_uuid, request_id, generation) IN (
			SELECT a.agent_uuid, a.request_id, a.generation FROM claim_next_attempts AS a WHERE a.updated_at < ?
			AND (a.updated_at < ? OR NOT EXISTS (SELECT 1 FROM tool_requests AS q WHERE q.agent_uuid = a.agent_uuid
			AND q.request_id = a.request_id AND q.generation = a.generation AND q.state = 'running'))
			ORDER BY a.updated_at LIMIT ?)`, []any{now.Add(-r.ClaimAttempts), now.Add(-r.Requests)}},
		{&out.ClaimReservations, `DELETE FROM claim_reservations WHERE task_uuid IN (SELECT task_uuid FROM claim_reservations
			WHERE expires_at < ? ORDER BY expires_at LIMIT ?)`, []any{now}},
		{&out.Events, `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE seq IS NOT NULL
			AND seq < (SELECT MAX(seq) FROM events) AND created_at < ? ORDER BY seq LIMIT ?)`,
			[]any{now.Add(-cmp.Or(r.Events, r.Requests))}},
		{&out.Deliveries, `DELETE FROM webhook_deliveries WHERE uuid IN (SELECT uuid FROM webhook_deliveries
			WHERE state IN ('delivered', 'dead') AND updated_at < ? ORDER BY updated_at LIMIT ?)`, []any{now.Add(-r.Journal)}},
	}
	for _, j := range jobs {
		for {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 5*time.Second {
				out.More = true
				return out, nil
			}
			res, err := s.DB.NewRaw(j.query, append(j.args, PruneBatch)...).Exec(ctx)
			if err != nil {
				return out, fmt.Errorf("prune: %w", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return out, err
			}
			*j.count += int(n)
			if n < PruneBatch {
				break
			}
		}
	}
	return out, nil
}

// RetainedRows counts the rows of the tables Prune keeps bounded, by table name.
func (s *Store) RetainedRows(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for _, t := range []string{"tool_requests", "change_journal", "claim_next_attempts", "claim_reservations", "events",
		"webhook_deliveries"} {
		n, err := s.DB.NewSelect().Table(t).Count(ctx)
		if err != nil {
			return nil, err
		}
		out[t] = int(n)
	}
	return out, nil
}
