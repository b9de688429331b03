package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/store"
)

// Checked is an entity as `chorus ops check` compares its rows with its workflow's state
// (docs/write-path.md, "Check and repair"): the row's columns the workflow owns, with version and
// change_id, rendered as text (store.ColumnValues), and what the entity owns besides its row:
// "round <uuid>" (an elaboration round's status), "criterion <uuid>" ("status/dev_status" of an
// acceptance criterion), and a proposal's "document drafts" and "task drafts" (their uuids in
// order, comma-separated). The same rendering serves both sides, so the two compare equal exactly
// when ops check finds nothing to report between them.
type Checked struct {
	// Columns and PartNames are the keys of Values and Parts, in the order findings list them.
	Columns, PartNames []string
	Values, Parts      map[string]string
}

// NewChecked renders model's columns cols (IdeaColumns, ProposalColumns or TaskColumns) with
// version and change_id. The error names a column model does not have.
func NewChecked(model any, cols []string) (Checked, error) {
	cols = append(slices.Clone(cols), "version", "change_id")
	//workflowcheck:ignore (reflection over a struct's fields and fixed formats: one answer)
	values, err := store.ColumnValues(model, cols)
	return Checked{Columns: cols, Values: values, Parts: map[string]string{}}, err
}

// Part records one of what the entity owns besides its row.
func (c *Checked) Part(name, value string) {
	if _, ok := c.Parts[name]; !ok {
		c.PartNames = append(c.PartNames, name)
	}
	c.Parts[name] = value
}

// Digest is 16 hex digits of a SHA-256 over c's columns and parts, each "name=value" on a line of
// its own, in sorted order: two renderings with the same digest compare equal. An entity workflow
// keeps its state's digest in its memo (MemoDigest), so a full `ops check` pass queries only the
// workflows whose digest is not their row's.
func (c Checked) Digest() string {
	lines := make([]string, 0, len(c.Values)+len(c.Parts))
	for _, k := range c.Columns {
		lines = append(lines, "column "+k+"="+c.Values[k])
	}
	for _, k := range c.PartNames {
		lines = append(lines, k+"="+c.Parts[k])
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}

// Checked is the idea's state as ops check compares it with its rows.
func (s IdeaState) Checked() (Checked, error) {
	p := s.Projection()
	c, err := NewChecked(&p, IdeaColumns)
	for _, r := range s.Rounds {
		c.Part("round "+r.UUID, r.Status)
	}
	return c, err
}

// Checked is the proposal's state as ops check compares it with its rows.
func (s ProposalState) Checked() (Checked, error) {
	p := s.Projection()
	c, err := NewChecked(&p, ProposalColumns)
	c.Part("document drafts", strings.Join(s.Documents, ","))
	c.Part("task drafts", strings.Join(s.Tasks, ","))
	return c, err
}

// Checked is the task's state as ops check compares it with its rows.
func (s TaskState) Checked() (Checked, error) {
	p := s.Projection()
	c, err := NewChecked(&p, TaskColumns)
	for _, cr := range s.Criteria {
		c.Part("criterion "+cr.UUID, cr.Status+"/"+cr.DevStatus)
	}
	return c, err
}

// MemoDigest and MemoVersion are the memo keys where an entity workflow keeps the Checked digest
// of its state and its row version, upserted with every change (publishDigestChange). Both are
// absent while the workflow holds no entity (not created yet, or deleted), and in runs recorded
// before publishDigestChange until their next change.
const (
	MemoDigest  = "digest"
	MemoVersion = "version"
)

// publishDigestChange is the workflow.GetVersion change id of entity workflows keeping their
// state's digest and row version in the memo (MemoDigest, MemoVersion).
const publishDigestChange = "publish-digest"

// withDigest adds the digest and row version of a state c to memo, or removes them (a nil value)
// when the workflow holds no entity or c could not be rendered.
func withDigest(memo map[string]any, holds bool, c Checked, err error, version int64) map[string]any {
	if !holds || err != nil {
		memo[MemoDigest], memo[MemoVersion] = nil, nil
		return memo
	}
	memo[MemoDigest], memo[MemoVersion] = c.Digest(), version
	return memo
}

// startMemo is memo without its nil entries, for starting a workflow (a nil entry only means
// "remove" to UpsertMemo).
func startMemo(memo map[string]any) map[string]any {
	//workflowcheck:ignore (deleting the nil entries has one outcome in any order)
	for k, v := range memo {
		if v == nil {
			delete(memo, k)
		}
	}
	return memo
}

// taskStartMemo is the memo a task's workflow starts with from its first state st: its title,
// project and digest.
func taskStartMemo(st TaskState) map[string]any {
	checked, err := st.Checked()
	return startMemo(withDigest(entityMemo(st.Title, st.ProjectName), true, checked, err, st.Row.Version))
}
