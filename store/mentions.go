package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Mentions (docs/rules.md §7.3): a text names a user or an agent of the company with
// @[Display Name](user:<uuid>) or @[Display Name](agent:<uuid>). Each one a change records
// becomes a Mention row, a "mentioned" activity on the target and, when the person can see the
// project, a "mentioned" notification.

// Mention is one person named in a comment, a task description or an idea's content.
type Mention struct {
	bun.BaseModel `bun:"table:mentions"`

	UUID          string    `bun:"uuid,pk"`
	CompanyUUID   string    `bun:"company_uuid"`
	SourceType    string    `bun:"source_type"`
	SourceUUID    string    `bun:"source_uuid"`
	MentionedType string    `bun:"mentioned_type"`
	MentionedUUID string    `bun:"mentioned_uuid"`
	ActorType     string    `bun:"actor_type"`
	ActorUUID     string    `bun:"actor_uuid"`
	CreatedAt     time.Time `bun:"created_at"`
}

// MentionRef is one mention markup found in a text.
type MentionRef struct {
	Type string // "user" or "agent"
	UUID string // lower case
	Name string // the display name written in the markup
}

// MaxMentionsPerText bounds how many distinct people one text can mention (docs/rules.md §7.3);
// the ones after the tenth are ignored.
const MaxMentionsPerText = 10

// mentionMarkup matches @[Name](user:<uuid>) and @[Name](agent:<uuid>), the uuid in any case,
// optionally followed by a query suffix ("?cwd=...&host=...") inside the parentheses. The name
// may not contain brackets or line breaks.
var mentionMarkup = regexp.MustCompile(`@\[([^\[\]\n]+)\]\((user|agent):([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})(?:\?[^()\s]*)?\)`)

// ParseMentions returns the distinct mentions of text in order of first appearance, at most
// MaxMentionsPerText. Malformed markup (no uuid, another type, a broken uuid) is plain text.
func ParseMentions(text string) []MentionRef {
	var out []MentionRef
	seen := map[string]bool{}
	for _, m := range mentionMarkup.FindAllStringSubmatch(text, -1) {
		r := MentionRef{Type: m[2], UUID: strings.ToLower(m[3]), Name: strings.TrimSpace(m[1])}
		if seen[r.Type+":"+r.UUID] {
			continue
		}
		seen[r.Type+":"+r.UUID] = true
		out = append(out, r)
		if len(out) == MaxMentionsPerText {
			break
		}
	}
	return out
}

// MentionText is text whose mentions a change records, and where they happened.
type MentionText struct {
	// Seed makes the ids of the rows written (mentions, activities, notifications): the same
	// seed writes the same rows, so a retried change inserts nothing twice.
	Seed string
	Text string
	// FromComment: Text is the content of the change's comment (TaskChange.Comment), which the
	// store takes from there; the change carries the text once.
	FromComment bool
	// Previous is the text before an edit: mentions it already had are not new (docs/rules.md
	// §7.3). PreviousColumn, when set, has the store read it from the target's row inside the
	// change's transaction, before the change writes the row.
	Previous       string
	PreviousColumn string
	// Source is what holds the text: a comment, a task (description) or an idea (content).
	SourceType, SourceUUID string
	// Target is the entity the activity and the notification are about: the comment's target,
	// or the task or idea itself.
	TargetType, TargetUUID, TargetTitle, ProjectUUID string
	ActorType, ActorUUID, ActorName                  string
	SessionUUID, SessionName                         *string
	At                                               time.Time
}

// readPrevious fills m.Previous from the target row's PreviousColumn, when it names one.
func (m *MentionText) readPrevious(ctx context.Context, db bun.IDB, table string) error {
	if m == nil || m.PreviousColumn == "" {
		return nil
	}
	var prev *string
	err := db.NewSelect().Table(table).Column(m.PreviousColumn).Where("uuid = ?", m.TargetUUID).Scan(ctx, &prev)
	if err != nil {
		return mapErr(err, table)
	}
	if prev != nil {
		m.Previous = *prev
	}
	return nil
}

var mentionNS = uuid.MustParse("4a1c7e52-93b8-4f0d-8e21-6b5d2c9f0a37")

// derivedID is a name-based uuid laid out as version 4, like every id Chorus derives
// (docs/rules.md §1.1).
func derivedID(parts ...string) string {
	u := uuid.NewSHA1(mentionNS, []byte(strings.Join(parts, "/")))
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return u.String()
}

// writeMentions records m's new mentions in db (the change's transaction): per person that
// exists in the company and is not the actor, a Mention row, a "mentioned" activity on the
// target and a "mentioned" notification (InsertNotifications skips people who cannot see the
// project).
func writeMentions(ctx context.Context, db bun.IDB, companyUUID string, m *MentionText) error {
	if m == nil {
		return nil
	}
	before := map[string]bool{}
	for _, r := range ParseMentions(m.Previous) {
		before[r.Type+":"+r.UUID] = true
	}
	snippet := mentionSnippet(m.Text)
	for _, r := range ParseMentions(m.Text) {
		if before[r.Type+":"+r.UUID] || (r.Type == m.ActorType && r.UUID == m.ActorUUID) {
			continue
		}
		name, found, err := personName(ctx, db, companyUUID, r)
		if err != nil {
			return err
		}
		if !found {
			continue // nobody of this company: plain text
		}
		key := m.Seed + "/mention/" + r.Type + "/" + r.UUID
		row := Mention{UUID: derivedID(key), CompanyUUID: companyUUID, SourceType: m.SourceType, SourceUUID: m.SourceUUID,
			MentionedType: r.Type, MentionedUUID: r.UUID, ActorType: m.ActorType, ActorUUID: m.ActorUUID, CreatedAt: m.At}
		if _, err := db.NewInsert().Model(&row).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
			return fmt.Errorf("insert mention: %w", err)
		}
		act := Activity{UUID: derivedID(key, "activity"), CompanyUUID: companyUUID, ProjectUUID: m.ProjectUUID,
			TargetType: m.TargetType, TargetUUID: m.TargetUUID, ActorType: m.ActorType, ActorUUID: m.ActorUUID,
			Action: "mentioned", SessionUUID: m.SessionUUID, SessionName: m.SessionName, CreatedAt: m.At,
			Value: jsonValue(map[string]string{"mentionedType": r.Type, "mentionedUuid": r.UUID, "mentionedName": name,
				"sourceType": m.SourceType, "sourceUuid": m.SourceUUID})}
		if _, err := db.NewInsert().Model(&act).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
			return fmt.Errorf("insert mentioned activity: %w", err)
		}
		err = InsertNotifications(ctx, db, companyUUID, NotifySpec{Seed: key, ProjectUUID: m.ProjectUUID, Action: "mentioned",
			EntityType: m.TargetType, EntityUUID: m.TargetUUID, EntityTitle: m.TargetTitle,
			Message:   fmt.Sprintf("%s mentioned you: %q", m.ActorName, snippet),
			ActorType: m.ActorType, ActorUUID: m.ActorUUID, ActorName: m.ActorName,
			Recipients: []Recipient{{Type: r.Type, UUID: r.UUID}}})
		if err != nil {
			return err
		}
	}
	return nil
}

// personName returns the display name of a user or agent of the company, and whether it exists.
func personName(ctx context.Context, db bun.IDB, companyUUID string, r MentionRef) (string, bool, error) {
	if r.Type == "agent" {
		var a Agent
		err := db.NewSelect().Model(&a).Column("uuid", "name").Where("uuid = ?", r.UUID).Where("company_uuid = ?", companyUUID).Scan(ctx)
		if err != nil {
			return "", false, ignoreNoRows(err)
		}
		return a.Name, true, nil
	}
	var u User
	err := db.NewSelect().Model(&u).Column("uuid", "name", "email").Where("uuid = ?", r.UUID).Where("company_uuid = ?", companyUUID).Scan(ctx)
	if err != nil {
		return "", false, ignoreNoRows(err)
	}
	return u.DisplayName(), true, nil
}

// maxSnippetRunes is how much of a text a mention notification quotes.
const maxSnippetRunes = 100

// mentionSnippet is the start of text as a reader sees it: markup shown as @Name, whitespace
// collapsed, cut to 100 code points with "...".
func mentionSnippet(text string) string {
	plain := mentionMarkup.ReplaceAllString(text, "@$1")
	plain = strings.Join(strings.Fields(plain), " ")
	if r := []rune(plain); len(r) > maxSnippetRunes {
		return string(r[:maxSnippetRunes-3]) + "..."
	}
	return plain
}

// MentionSpans are the byte offsets of every mention markup in text, for display: per match,
// [start, end, nameStart, nameEnd, typeStart, typeEnd, uuidStart, uuidEnd] (the syntax of
// docs/rules.md §7.3, the same ParseMentions reads; unlike it, repeats and those past the tenth
// are included).
func MentionSpans(text string) [][]int { return mentionMarkup.FindAllStringSubmatchIndex(text, -1) }
