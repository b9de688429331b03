package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Event is one lifecycle event (docs/rules.md §7.4): what a notification announces, as the event
// stream (GET /api/events) and webhooks carry it. It names ids and kinds only, never titles,
// messages or keys.
type Event struct {
	bun.BaseModel `bun:"table:events,alias:e"`

	// ID is the insertion order (internal); Seq is the public position: gapless, in commit
	// order, 0 until the sequencer (SequenceEvents) has given it one.
	ID          int64     `bun:"id,pk,autoincrement"`
	Seq         int64     `bun:"seq,nullzero"`
	UUID        string    `bun:"uuid"`
	CompanyUUID string    `bun:"company_uuid"`
	ProjectUUID string    `bun:"project_uuid"`
	Kind        string    `bun:"kind"`
	EntityType  string    `bun:"entity_type"`
	EntityUUID  string    `bun:"entity_uuid"`
	IdeaUUID    string    `bun:"idea_uuid"`
	ActorType   string    `bun:"actor_type"`
	ActorUUID   string    `bun:"actor_uuid"`
	CreatedAt   time.Time `bun:"created_at"`
}

// EventWire is an event as GET /api/events and webhooks send it (JSON): ids and kinds only. ID is
// the seq, as a string (the SSE id a client resumes from).
type EventWire struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	ProjectUUID string `json:"projectUuid"`
	EntityType  string `json:"entityType"`
	EntityUUID  string `json:"entityUuid"`
	IdeaUUID    string `json:"ideaUuid"`
	ActorType   string `json:"actorType"`
	ActorUUID   string `json:"actorUuid"`
	At          string `json:"at"`
}

// Wire is the event as it is sent.
func (e Event) Wire() EventWire {
	return EventWire{ID: strconv.FormatInt(e.Seq, 10), Kind: e.Kind, ProjectUUID: e.ProjectUUID, EntityType: e.EntityType,
		EntityUUID: e.EntityUUID, IdeaUUID: e.IdeaUUID, ActorType: e.ActorType, ActorUUID: e.ActorUUID,
		At: e.CreatedAt.UTC().Format(time.RFC3339Nano)}
}

// EventRecipient is who an event is for: the recipients its notification went to.
type EventRecipient struct {
	bun.BaseModel `bun:"table:event_recipients"`

	RecipientType string `bun:"recipient_type,pk"`
	RecipientUUID string `bun:"recipient_uuid,pk"`
	EventID       int64  `bun:"event_id,pk"`
}

// EventsChannel is the PostgreSQL NOTIFY channel that announces new events: a writing transaction
// notifies it (delivered when it commits), and so does the sequencer after it gives events their
// seq. Its payload is empty; listeners read the table.
const EventsChannel = "chorus_events"

var eventNS = uuid.MustParse("5b7f4f3e-0a5e-4d71-9c39-6f0c6f7e8a21")

// insertEvent writes spec's event and its recipients in db (the notification's transaction). The
// event's uuid derives from the spec's seed, action and entity, so a retried write adds nothing
// and a second spec of the same event adds only its recipients.
func insertEvent(ctx context.Context, db bun.IDB, companyUUID string, spec NotifySpec, recipients []Recipient, now time.Time) error {
	ev := Event{UUID: uuid.NewSHA1(eventNS, []byte(spec.Seed+"/"+spec.Action+"/"+spec.EntityUUID)).String(),
		CompanyUUID: companyUUID, ProjectUUID: spec.ProjectUUID, Kind: spec.Action, EntityType: spec.EntityType,
		EntityUUID: spec.EntityUUID, ActorType: spec.ActorType, ActorUUID: spec.ActorUUID, CreatedAt: now}
	var err error
	if ev.IdeaUUID, err = ideaOfEntity(ctx, db, spec.EntityType, spec.EntityUUID); err != nil {
		return err
	}
	if _, err := db.NewInsert().Model(&ev).ExcludeColumn("id", "seq").On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("insert event %s: %w", spec.Action, err)
	}
	if err := db.NewSelect().Model((*Event)(nil)).Column("id").Where("uuid = ?", ev.UUID).Scan(ctx, &ev.ID); err != nil {
		return fmt.Errorf("read event %s: %w", spec.Action, err)
	}
	for _, r := range recipients {
		row := EventRecipient{RecipientType: r.Type, RecipientUUID: r.UUID, EventID: ev.ID}
		if _, err := db.NewInsert().Model(&row).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
			return fmt.Errorf("insert event recipient: %w", err)
		}
	}
	if db.Dialect().Name().String() == "pg" {
		if _, err := db.NewRaw("SELECT pg_notify(?, '')", EventsChannel).Exec(ctx); err != nil {
			return fmt.Errorf("announce event: %w", err)
		}
	}
	return nil
}

// ideaOfEntity is the idea an entity belongs to, for grouping events by idea: an idea itself; a
// proposal's first input idea; a task's or a document's proposal's. "" when there is none (a
// quick task, a proposal from documents, an agent).
func ideaOfEntity(ctx context.Context, db bun.IDB, entityType, entityUUID string) (string, error) {
	var proposal string
	switch entityType {
	case "idea":
		return entityUUID, nil
	case "proposal":
		proposal = entityUUID
	case "task", "document":
		var p *string
		err := db.NewSelect().Table(entityType+"s").Column("proposal_uuid").Where("uuid = ?", entityUUID).Scan(ctx, &p)
		if errors.Is(err, sql.ErrNoRows) || p == nil {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("read the %s's proposal: %w", entityType, err)
		}
		proposal = *p
	default:
		return "", nil
	}
	var pr Proposal
	err := db.NewSelect().Model(&pr).Column("input_type", "input_uuids").Where("uuid = ?", proposal).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the proposal's inputs: %w", err)
	}
	if pr.InputType != "idea" || len(pr.InputUUIDs) == 0 {
		return "", nil
	}
	return pr.InputUUIDs[0], nil
}

// sequencerLock names the PostgreSQL advisory lock the sequencer holds while it numbers events.
const sequencerLock = "chorus/events/sequencer"

// SequenceEvents gives committed events without a seq their seq, in insertion order after the
// highest seq given so far (at most 1,000 a call), and returns the highest seq. Any number of
// processes may call it at once: on PostgreSQL they take turns (a transaction-scoped advisory
// lock), so a call returns only after every event committed before it was numbered, by it or by
// the call it waited for; the numbering is announced on EventsChannel. On SQLite writes take
// turns anyway.
// Because numbering happens after the events' own transactions committed, and one numbering at a
// time, the seqs a reader can see are always a gapless prefix: it never sees N+1 before N.
func (s *Store) SequenceEvents(ctx context.Context) (int64, error) {
	pending, err := s.DB.NewSelect().Model((*Event)(nil)).Where("seq IS NULL").Limit(1).Exists(ctx)
	if err != nil {
		return 0, fmt.Errorf("look for new events: %w", err)
	}
	if pending {
		pg := s.Dialect() == "pg"
		err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if pg {
				if _, err := tx.NewRaw("SELECT pg_advisory_xact_lock(hashtextextended(? || current_schema(), 0))",
					sequencerLock).Exec(ctx); err != nil {
					return fmt.Errorf("lock the event sequencer: %w", err)
				}
			}
			var ids []int64
			if err := tx.NewSelect().Model((*Event)(nil)).Column("id").Where("seq IS NULL").Order("id").Limit(1000).
				Scan(ctx, &ids); err != nil {
				return fmt.Errorf("read new events: %w", err)
			}
			if len(ids) == 0 {
				return nil
			}
			var top int64
			if err := tx.NewSelect().Model((*Event)(nil)).ColumnExpr("COALESCE(MAX(seq), 0)").Scan(ctx, &top); err != nil {
				return fmt.Errorf("read the last event: %w", err)
			}
			for i, id := range ids {
				if _, err := tx.NewUpdate().Model((*Event)(nil)).Set("seq = ?", top+int64(i)+1).Where("id = ?", id).
					Exec(ctx); err != nil {
					return fmt.Errorf("number event: %w", err)
				}
			}
			if pg {
				if _, err := tx.NewRaw("SELECT pg_notify(?, '')", EventsChannel).Exec(ctx); err != nil {
					return fmt.Errorf("announce events: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return s.LastEventSeq(ctx)
}

// LastEventSeq is the highest seq given so far (0 when there is none).
func (s *Store) LastEventSeq(ctx context.Context) (int64, error) {
	var top int64
	if err := s.DB.NewSelect().Model((*Event)(nil)).ColumnExpr("COALESCE(MAX(seq), 0)").Scan(ctx, &top); err != nil {
		return 0, fmt.Errorf("read the last event: %w", err)
	}
	return top, nil
}

// OldestEventSeq is the lowest seq still kept (0 when there is none): a reader resuming below it
// has missed pruned events.
func (s *Store) OldestEventSeq(ctx context.Context) (int64, error) {
	var low int64
	if err := s.DB.NewSelect().Model((*Event)(nil)).ColumnExpr("COALESCE(MIN(seq), 0)").Where("seq IS NOT NULL").
		Scan(ctx, &low); err != nil {
		return 0, fmt.Errorf("read the oldest event: %w", err)
	}
	return low, nil
}

// EventFilter narrows a read of events: to some projects and some kinds (none: all).
type EventFilter struct {
	Projects []string
	Kinds    []string
}

func (f EventFilter) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if len(f.Projects) > 0 {
		q = q.Where("e.project_uuid IN (?)", bun.List(f.Projects))
	}
	if len(f.Kinds) > 0 {
		q = q.Where("e.kind IN (?)", bun.List(f.Kinds))
	}
	return q
}

// EventsAfter reads the numbered events with seq > after, seq ascending, at most limit, of one
// company ("" for all): what webhooks deliver, whoever they were for.
func (s *Store) EventsAfter(ctx context.Context, companyUUID string, after int64, limit int, f EventFilter) ([]Event, error) {
	var out []Event
	q := s.DB.NewSelect().Model(&out).Where("e.seq > ?", after).Order("e.seq").Limit(int64(limit))
	if companyUUID != "" {
		q = q.Where("e.company_uuid = ?", companyUUID)
	}
	if err := f.apply(q).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

// RecipientEventsAfter reads r's numbered events with seq > after, seq ascending, at most limit,
// leaving out those of projects c cannot see now (docs/rules.md §6.3: hidden means not sent): what
// r's event stream sends, r being c's own recipient. It also returns the highest seq it passed
// over, sent or not, so the reader moves past hidden events.
func (s *Store) RecipientEventsAfter(ctx context.Context, c Caller, r Recipient, after int64, limit int,
	f EventFilter) ([]Event, int64, error) {
	q := s.DB.NewSelect().TableExpr("events AS e").Column("e.seq").
		Join("JOIN event_recipients AS er ON er.event_id = e.id").
		Where("er.recipient_type = ?", r.Type).Where("er.recipient_uuid = ?", r.UUID)
	return s.visibleEventsAfter(ctx, c, q, after, limit, f)
}

// ProjectEventsAfter reads the numbered events of one project with seq > after, whoever they were
// for, seq ascending, at most limit, when c can see the project now (none otherwise); it returns
// the highest seq it passed over, like RecipientEventsAfter.
func (s *Store) ProjectEventsAfter(ctx context.Context, c Caller, projectUUID string, after int64, limit int,
	f EventFilter) ([]Event, int64, error) {
	q := s.DB.NewSelect().TableExpr("events AS e").Column("e.seq").Where("e.project_uuid = ?", projectUUID)
	return s.visibleEventsAfter(ctx, c, q, after, limit, f)
}

// visibleEventsAfter takes the seqs > after that seqs (a query of e.seq over "events AS e")
// selects, at most limit, and reads those events of c's company whose project c can see now
// (company-wide events, of no project, too). It returns them and the highest seq it passed over.
func (s *Store) visibleEventsAfter(ctx context.Context, c Caller, seqs *bun.SelectQuery, after int64, limit int,
	f EventFilter) ([]Event, int64, error) {
	var passed []int64
	if err := f.apply(seqs.Where("e.seq > ?", after).Order("e.seq").Limit(int64(limit))).Scan(ctx, &passed); err != nil {
		return nil, after, fmt.Errorf("read events: %w", err)
	}
	if len(passed) == 0 {
		return nil, after, nil
	}
	var out []Event
	err := s.DB.NewSelect().Model(&out).Where("e.seq IN (?)", bun.List(passed)).
		Where("e.company_uuid = ?", c.CompanyUUID).
		Where("(e.project_uuid = '' OR e.project_uuid IN (?))", s.visibleProjectIDs(c)).
		Order("e.seq").Scan(ctx)
	if err != nil {
		return nil, after, fmt.Errorf("read events: %w", err)
	}
	return out, passed[len(passed)-1], nil
}

// NewEventRecipients reads who the numbered events with seq in (after, upTo] are for, for waking
// their readers. It returns the recipients (each once) and the highest seq read.
func (s *Store) NewEventRecipients(ctx context.Context, after int64, limit int) ([]Recipient, int64, error) {
	var rows []struct {
		Seq           int64  `bun:"seq"`
		RecipientType string `bun:"recipient_type"`
		RecipientUUID string `bun:"recipient_uuid"`
	}
	var seqs []int64
	if err := s.DB.NewSelect().Model((*Event)(nil)).Column("seq").Where("seq > ?", after).Order("seq").Limit(int64(limit)).
		Scan(ctx, &seqs); err != nil {
		return nil, after, fmt.Errorf("read new events: %w", err)
	}
	if len(seqs) == 0 {
		return nil, after, nil
	}
	top := seqs[len(seqs)-1]
	err := s.DB.NewSelect().TableExpr("events AS e").ColumnExpr("e.seq, er.recipient_type, er.recipient_uuid").
		Join("JOIN event_recipients AS er ON er.event_id = e.id").
		Where("e.seq > ?", after).Where("e.seq <= ?", top).Scan(ctx, &rows)
	if err != nil {
		return nil, after, fmt.Errorf("read new events' recipients: %w", err)
	}
	seen := map[Recipient]bool{}
	var out []Recipient
	for _, r := range rows {
		rc := Recipient{Type: r.RecipientType, UUID: r.RecipientUUID}
		if !seen[rc] {
			seen[rc] = true
			out = append(out, rc)
		}
	}
	return out, top, nil
}

// EventBySeq reads one numbered event.
func (s *Store) EventBySeq(ctx context.Context, seq int64) (*Event, error) {
	ev := new(Event)
	err := s.DB.NewSelect().Model(ev).Where("seq = ?", seq).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read event: %w", err)
	}
	return ev, nil
}
