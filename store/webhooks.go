package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Webhooks (docs/rules.md §7.5): a project's webhook receives the project's events, from its
// creation on, at its URL. The dispatcher (DispatchWebhookEvents) turns numbered events into
// delivery rows, one per event and matching webhook; a Temporal workflow per delivery sends it
// (activities.DeliverWebhook) and records each attempt here.

// Webhook is one project's webhook. Secret signs its deliveries; it is stored as is (the
// signature needs it) and never leaves the store through a listing (json:"-").
type Webhook struct {
	bun.BaseModel `bun:"table:webhooks,alias:w"`

	UUID          string     `bun:"uuid,pk" json:"uuid"`
	CompanyUUID   string     `bun:"company_uuid" json:"-"`
	ProjectUUID   string     `bun:"project_uuid" json:"projectUuid"`
	URL           string     `bun:"url" json:"url"`
	Secret        string     `bun:"secret" json:"-"`
	Kinds         string     `bun:"kinds" json:"-"` // comma list; '' for every kind
	FromSeq       int64      `bun:"from_seq" json:"-"`
	CreatedByType string     `bun:"created_by_type" json:"createdByType"`
	CreatedByUUID string     `bun:"created_by_uuid" json:"createdByUuid"`
	CreatedAt     time.Time  `bun:"created_at" json:"createdAt"`
	DisabledAt    *time.Time `bun:"disabled_at" json:"disabledAt,omitempty"`
}

// KindList is the kinds the webhook receives (none: every kind).
func (w Webhook) KindList() []string {
	if w.Kinds == "" {
		return []string{}
	}
	return strings.Split(w.Kinds, ",")
}

// Wants says whether the webhook receives an event of this kind.
func (w Webhook) Wants(kind string) bool { return w.Kinds == "" || slices.Contains(w.KindList(), kind) }

// Delivery states (docs/rules.md §7.5).
const (
	DeliveryPending    = "pending"    // made; its workflow is not started yet
	DeliveryDelivering = "delivering" // its workflow is trying
	DeliveryDelivered  = "delivered"  // a 2xx answered
	DeliveryDead       = "dead"       // retries ran out; redeliver to try again
)

// DeliveryStates lists the states, in their order.
var DeliveryStates = []string{DeliveryPending, DeliveryDelivering, DeliveryDelivered, DeliveryDead}

// WebhookDelivery is one event for one webhook. UUID is its idempotency id (Chorus-Webhook-Id):
// uuid5 of the webhook's and the event's uuids, the same on every attempt and redelivery. Body
// is the payload as sent. Attempts counts every attempt, redeliveries' included.
type WebhookDelivery struct {
	bun.BaseModel `bun:"table:webhook_deliveries,alias:d"`

	UUID           string     `bun:"uuid,pk" json:"uuid"`
	WebhookUUID    string     `bun:"webhook_uuid" json:"webhookUuid"`
	EventSeq       int64      `bun:"event_seq" json:"eventId"`
	EventUUID      string     `bun:"event_uuid" json:"-"`
	Kind           string     `bun:"kind" json:"kind"`
	Body           string     `bun:"body" json:"-"`
	State          string     `bun:"state" json:"state"`
	Attempts       int        `bun:"attempts" json:"attempts"`
	LastStatusCode int        `bun:"last_status_code" json:"lastStatusCode,omitempty"`
	LastError      string     `bun:"last_error" json:"lastError,omitempty"`
	NextAttemptAt  *time.Time `bun:"next_attempt_at" json:"nextAttemptAt,omitempty"`
	DeliveredAt    *time.Time `bun:"delivered_at" json:"deliveredAt,omitempty"`
	WorkflowID     string     `bun:"workflow_id" json:"workflowId,omitempty"`
	CreatedAt      time.Time  `bun:"created_at" json:"createdAt"`
	UpdatedAt      time.Time  `bun:"updated_at" json:"updatedAt"`
}

// WebhookPayload is the body of a delivery (docs/rules.md §7.5): ids and kinds only, never keys,
// secrets, titles or messages.
type WebhookPayload struct {
	ID          string    `json:"id"` // the delivery's uuid
	Event       EventWire `json:"event"`
	WebhookUUID string    `json:"webhookUuid"`
	ProjectUUID string    `json:"projectUuid"`
}

var deliveryNS = uuid.MustParse("9d3c1f0e-52b4-4c8e-a7f1-2e6b0c4d8a17")

// DeliveryUUID is the idempotency id of an event's delivery to a webhook.
func DeliveryUUID(webhookUUID, eventUUID string) string {
	return uuid.NewSHA1(deliveryNS, []byte(webhookUUID+"/"+eventUUID)).String()
}

// MaxProjectWebhooks bounds a project's webhooks (docs/rules.md §7.5): each event makes one
// delivery per webhook, and each attempt holds one of the workers' activity slots for up to the
// delivery timeout, so the fan-out of one event must stay small.
const MaxProjectWebhooks = 20

// ErrWebhookLimit: the project already has MaxProjectWebhooks webhooks.
var ErrWebhookLimit = fmt.Errorf("The project already has %d webhooks, the most a project may have; remove one it no "+
	"longer needs (one webhook can receive every event kind)", MaxProjectWebhooks)

// CreateWebhook stores a new webhook, which receives the events numbered after this moment:
// committed events are numbered first (SequenceEvents), so none written before it reaches it.
// w's FromSeq and CreatedAt are set here. A project that has MaxProjectWebhooks already gets
// ErrWebhookLimit (counted under the dispatcher's lock on PostgreSQL; SQLite's writes take turns).
func (s *Store) CreateWebhook(ctx context.Context, w *Webhook) error {
	if _, err := s.SequenceEvents(ctx); err != nil {
		return err
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// A dispatcher that does not see this webhook has finished its pass before FromSeq is
		// read (PostgreSQL: they take turns on the dispatcher's lock; SQLite: writes take turns),
		// so it cannot have moved past an event this webhook should get.
		if s.Dialect() == "pg" {
			if _, err := tx.NewRaw("SELECT pg_advisory_xact_lock(hashtextextended(? || current_schema(), 0))", dispatcherLock).
				Exec(ctx); err != nil {
				return fmt.Errorf("lock the webhook dispatcher: %w", err)
			}
		}
		n, err := tx.NewSelect().Model((*Webhook)(nil)).Where("w.project_uuid = ?", w.ProjectUUID).Count(ctx)
		if err != nil {
			return fmt.Errorf("count the project's webhooks: %w", err)
		}
		if n >= MaxProjectWebhooks {
			return ErrWebhookLimit
		}
		if err := tx.NewSelect().Model((*Event)(nil)).ColumnExpr("COALESCE(MAX(seq), 0)").Scan(ctx, &w.FromSeq); err != nil {
			return fmt.Errorf("read the last event: %w", err)
		}
		w.CreatedAt = Now()
		if _, err := tx.NewInsert().Model(w).Exec(ctx); err != nil {
			return fmt.Errorf("insert webhook: %w", err)
		}
		return nil
	})
}

// ProjectWebhooks lists a project's webhooks, oldest first.
func (s *Store) ProjectWebhooks(ctx context.Context, companyUUID, projectUUID string) ([]Webhook, error) {
	out := []Webhook{}
	err := s.DB.NewSelect().Model(&out).Where("w.company_uuid = ?", companyUUID).Where("w.project_uuid = ?", projectUUID).
		Order("w.created_at", "w.uuid").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out, nil
}

// WebhookByUUID reads a webhook of the company (NotFound("Webhook") otherwise).
func (s *Store) WebhookByUUID(ctx context.Context, companyUUID, webhookUUID string) (*Webhook, error) {
	w := new(Webhook)
	err := s.DB.NewSelect().Model(w).Where("w.uuid = ?", webhookUUID).Where("w.company_uuid = ?", companyUUID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("Webhook")
	}
	if err != nil {
		return nil, fmt.Errorf("read webhook: %w", err)
	}
	return w, nil
}

// DeleteWebhook removes a webhook and its deliveries; a delivery's workflow still running finds
// its row gone and ends without sending.
func (s *Store) DeleteWebhook(ctx context.Context, companyUUID, webhookUUID string) error {
	if _, err := s.DB.NewDelete().Model((*Webhook)(nil)).Where("uuid = ?", webhookUUID).Where("company_uuid = ?", companyUUID).
		Exec(ctx); err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	return nil
}

// WebhookDeliveries lists a webhook's deliveries, newest event first, at most limit, of one
// state ("" for all).
func (s *Store) WebhookDeliveries(ctx context.Context, webhookUUID, state string, limit int) ([]WebhookDelivery, error) {
	out := []WebhookDelivery{}
	q := s.DB.NewSelect().Model(&out).Where("d.webhook_uuid = ?", webhookUUID).Order("d.event_seq DESC").Limit(int64(limit))
	if state != "" {
		q = q.Where("d.state = ?", state)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return out, nil
}

// WebhookDeliveryByUUID reads a delivery (NotFound("Delivery") otherwise).
func (s *Store) WebhookDeliveryByUUID(ctx context.Context, deliveryUUID string) (*WebhookDelivery, error) {
	d := new(WebhookDelivery)
	err := s.DB.NewSelect().Model(d).Where("d.uuid = ?", deliveryUUID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("Delivery")
	}
	if err != nil {
		return nil, fmt.Errorf("read webhook delivery: %w", err)
	}
	return d, nil
}

// webhookCursor is the dispatcher's one row.
type webhookCursor struct {
	bun.BaseModel `bun:"table:webhook_cursor"`

	ID      int   `bun:"id,pk"`
	LastSeq int64 `bun:"last_seq"`
}

// dispatcherLock names the PostgreSQL advisory lock dispatchers take turns on.
const dispatcherLock = "chorus/webhooks/dispatcher"

// DispatchWebhookEvents turns up to limit numbered events after the dispatcher's cursor into
// delivery rows, one per enabled webhook of the event's project that wants its kind and was made
// before the event was numbered (seq > FromSeq), and moves the cursor past them, in one
// transaction: an event is turned into deliveries once, and a retried pass adds nothing (ON
// CONFLICT DO NOTHING on the delivery's uuid). On PostgreSQL one dispatcher works at a time (a
// transaction-scoped advisory lock; the others return 0 at once). It returns how many events it
// read: limit means there may be more.
func (s *Store) DispatchWebhookEvents(ctx context.Context, limit int) (int, error) {
	read := 0
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		read = 0
		if s.Dialect() == "pg" {
			var got bool
			if err := tx.NewRaw("SELECT pg_try_advisory_xact_lock(hashtextextended(? || current_schema(), 0))", dispatcherLock).
				Scan(ctx, &got); err != nil {
				return fmt.Errorf("lock the webhook dispatcher: %w", err)
			}
			if !got {
				return nil
			}
		}
		var cur webhookCursor
		if err := tx.NewSelect().Model(&cur).Where("id = 1").Scan(ctx); err != nil {
			return fmt.Errorf("read the webhook cursor: %w", err)
		}
		var hooks []Webhook
		if err := tx.NewSelect().Model(&hooks).Where("w.disabled_at IS NULL").Scan(ctx); err != nil {
			return fmt.Errorf("read webhooks: %w", err)
		}
		after := cur.LastSeq
		if len(hooks) == 0 {
			// Nobody listens: skip to the newest event, which no later webhook receives anyway.
			_, err := tx.NewRaw("UPDATE webhook_cursor SET last_seq = (SELECT COALESCE(MAX(seq), 0) FROM events) WHERE id = 1 " +
				"AND last_seq < (SELECT COALESCE(MAX(seq), 0) FROM events)").Exec(ctx)
			return err
		}
		from := hooks[0].FromSeq
		byProject := map[string][]Webhook{}
		for _, w := range hooks {
			from = min(from, w.FromSeq)
			byProject[w.ProjectUUID] = append(byProject[w.ProjectUUID], w)
		}
		after = max(after, from)
		var evs []Event
		if err := tx.NewSelect().Model(&evs).Where("e.seq > ?", after).Order("e.seq").Limit(int64(limit)).Scan(ctx); err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		now := Now()
		for _, ev := range evs {
			for _, w := range byProject[ev.ProjectUUID] {
				if w.CompanyUUID != ev.CompanyUUID || ev.Seq <= w.FromSeq || !w.Wants(ev.Kind) {
					continue
				}
				d := WebhookDelivery{UUID: DeliveryUUID(w.UUID, ev.UUID), WebhookUUID: w.UUID, EventSeq: ev.Seq,
					EventUUID: ev.UUID, Kind: ev.Kind, State: DeliveryPending, CreatedAt: now, UpdatedAt: now}
				body, err := json.Marshal(WebhookPayload{ID: d.UUID, Event: ev.Wire(), WebhookUUID: w.UUID, ProjectUUID: w.ProjectUUID})
				if err != nil {
					return err
				}
				d.Body = string(body)
				if _, err := tx.NewInsert().Model(&d).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
					return fmt.Errorf("insert webhook delivery: %w", err)
				}
			}
		}
		read = len(evs)
		if read > 0 {
			after = evs[read-1].Seq
		}
		if after > cur.LastSeq {
			if _, err := tx.NewUpdate().Model((*webhookCursor)(nil)).Set("last_seq = ?", after).Where("id = 1").Exec(ctx); err != nil {
				return fmt.Errorf("move the webhook cursor: %w", err)
			}
		}
		return nil
	})
	return read, err
}

// InlineAttempt is the workflow_id of a delivery whose first attempt a dispatcher is making
// itself (ClaimFirstAttempt), before any workflow: one that fails it then starts its workflow.
const InlineAttempt = "inline"

// Undispatched is a delivery waiting for its workflow: new (Attempts 0), queued again by a
// redelivery, or one whose dispatcher's own first attempt was cut short (Inline).
type Undispatched struct {
	UUID       string `bun:"uuid"`
	Attempts   int    `bun:"attempts"`
	WorkflowID string `bun:"workflow_id"`
}

// Inline reports whether a dispatcher claimed the delivery's first attempt.
func (u Undispatched) Inline() bool { return u.WorkflowID == InlineAttempt }

// UndispatchedDeliveries lists up to limit deliveries that need a workflow, oldest first: pending
// ones without one, and those a dispatcher claimed for its first attempt (ClaimFirstAttempt)
// that have not moved since staleBefore (the dispatcher stopped during the attempt, or before
// it could start the workflow).
func (s *Store) UndispatchedDeliveries(ctx context.Context, limit int, staleBefore time.Time) ([]Undispatched, error) {
	var out []Undispatched
	err := s.DB.NewSelect().Model((*WebhookDelivery)(nil)).Column("uuid", "attempts", "workflow_id").
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.WhereGroup(" OR ", func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("workflow_id = ''").Where("state = ?", DeliveryPending)
			}).WhereGroup(" OR ", func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("workflow_id = ?", InlineAttempt).Where("state = ?", DeliveryDelivering).
					Where("updated_at < ?", staleBefore)
			})
		}).Order("created_at", "uuid").Limit(int64(limit)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read undispatched webhook deliveries: %w", err)
	}
	return out, nil
}

// ClaimFirstAttempt takes a new delivery (pending, no attempt, no workflow) for its dispatcher
// to make the first attempt itself, and reports whether it got it (another dispatcher may have).
func (s *Store) ClaimFirstAttempt(ctx context.Context, deliveryUUID string) (bool, error) {
	res, err := s.DB.NewUpdate().Model((*WebhookDelivery)(nil)).Set("workflow_id = ?", InlineAttempt).
		Set("state = ?", DeliveryDelivering).Set("updated_at = ?", Now()).Where("uuid = ?", deliveryUUID).
		Where("workflow_id = ''").Where("state = ?", DeliveryPending).Where("attempts = 0").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("claim the webhook delivery's first attempt: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// MarkDeliveryDispatched records the workflow of a delivery that was waiting for one (or whose
// first attempt its dispatcher made), and makes it delivering unless it is finished already.
func (s *Store) MarkDeliveryDispatched(ctx context.Context, deliveryUUID, workflowID string) error {
	_, err := s.DB.NewUpdate().Model((*WebhookDelivery)(nil)).Set("workflow_id = ?", workflowID).
		Set("state = CASE WHEN state = ? THEN ? ELSE state END", DeliveryPending, DeliveryDelivering).
		Set("updated_at = ?", Now()).Where("uuid = ?", deliveryUUID).Where("workflow_id IN ('', ?)", InlineAttempt).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record the webhook delivery's workflow: %w", err)
	}
	return nil
}

// DeliveryTarget is what an attempt needs: the delivery and its webhook's URL and secret.
type DeliveryTarget struct {
	Delivery WebhookDelivery
	URL      string
	Secret   string
}

// DeliveryTarget reads a delivery and its webhook for an attempt (NotFound("Delivery") when
// either is gone).
func (s *Store) DeliveryTarget(ctx context.Context, deliveryUUID string) (*DeliveryTarget, error) {
	d, err := s.WebhookDeliveryByUUID(ctx, deliveryUUID)
	if err != nil {
		return nil, err
	}
	var w Webhook
	err = s.DB.NewSelect().Model(&w).Where("w.uuid = ?", d.WebhookUUID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("Delivery")
	}
	if err != nil {
		return nil, fmt.Errorf("read the delivery's webhook: %w", err)
	}
	return &DeliveryTarget{Delivery: *d, URL: w.URL, Secret: w.Secret}, nil
}

// DeliveryAttempt is the outcome of one attempt: delivered (a 2xx), or failed with a status
// code (0 without an answer) and a short error, the next attempt due at Next (nil: none
// planned).
type DeliveryAttempt struct {
	Delivered  bool
	StatusCode int
	Error      string
	Next       *time.Time
}

// MaxDeliveryErrorBytes bounds a delivery's last error as recorded (no response body beyond it).
const MaxDeliveryErrorBytes = 200

// RecordDeliveryAttempt counts an attempt of a delivery and records its outcome.
func (s *Store) RecordDeliveryAttempt(ctx context.Context, deliveryUUID string, a DeliveryAttempt) error {
	msg := a.Error
	if len(msg) > MaxDeliveryErrorBytes {
		msg = strings.ToValidUTF8(msg[:MaxDeliveryErrorBytes], "") + "…"
	}
	now := Now()
	q := s.DB.NewUpdate().Model((*WebhookDelivery)(nil)).Set("attempts = attempts + 1").Set("last_status_code = ?", a.StatusCode).
		Set("last_error = ?", msg).Set("updated_at = ?", now).Where("uuid = ?", deliveryUUID)
	if a.Delivered {
		q = q.Set("state = ?", DeliveryDelivered).Set("delivered_at = ?", now).Set("next_attempt_at = NULL")
	} else {
		q = q.Set("state = ?", DeliveryDelivering).Set("next_attempt_at = ?", a.Next)
	}
	if _, err := q.Exec(ctx); err != nil {
		return fmt.Errorf("record the webhook delivery's attempt: %w", err)
	}
	return nil
}

// MarkDeliveryDead ends a delivery whose retries ran out: dead, visible, redeliverable.
func (s *Store) MarkDeliveryDead(ctx context.Context, deliveryUUID string) error {
	_, err := s.DB.NewUpdate().Model((*WebhookDelivery)(nil)).Set("state = ?", DeliveryDead).Set("next_attempt_at = NULL").
		Set("updated_at = ?", Now()).Where("uuid = ?", deliveryUUID).Where("state <> ?", DeliveryDelivered).Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark the webhook delivery dead: %w", err)
	}
	return nil
}

// RequeueDelivery queues a dead or delivered delivery again (a redelivery): pending, without a
// workflow, so the dispatcher starts a new run of its workflow; same uuid, same body. It reports
// false when the delivery is in another state (its workflow is still on it).
func (s *Store) RequeueDelivery(ctx context.Context, deliveryUUID string) (bool, error) {
	res, err := s.DB.NewUpdate().Model((*WebhookDelivery)(nil)).Set("state = ?", DeliveryPending).Set("workflow_id = ''").
		Set("next_attempt_at = NULL").Set("updated_at = ?", Now()).Where("uuid = ?", deliveryUUID).
		Where("state IN (?)", bun.List([]string{DeliveryDead, DeliveryDelivered})).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("queue the webhook delivery again: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
