package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/store"
)

// Workflow state is its own small types with JSON tags, never the storage rows and never free
// text beyond a title (docs/write-path.md, "Bounded state and payloads"): what continue-as-new
// carries stays tens of kilobytes whatever agents send.

// Party is who created or did something: an agent or a user.
type Party struct {
	Type string `json:"type"`
	UUID string `json:"uuid"`
}

// Holder is who an entity is assigned to, since when, and who assigned it (nil: claimed).
type Holder struct {
	Type string    `json:"type"`
	UUID string    `json:"uuid"`
	Name string    `json:"name,omitempty"`
	At   time.Time `json:"at"`
	By   *string   `json:"by,omitempty"`
}

// RowMark is where the entity's row stands: its version and the id of the change that put it
// there (docs/write-path.md, "One write protocol").
type RowMark struct {
	Version  int64  `json:"version"`
	ChangeID string `json:"changeId"`
}

// nextWrite is the protocol part of the change that moves a row from m. Its id is
// "<workflow id>#<new version>@<key>": inside an update, key is the first 16 hex digits of the
// update's key (store.UpdateKey), so every replay of the update, in this run or in a run that a
// `temporal workflow reset` started, names the same change and derives the same ids from it,
// while any other command at that version names another. ctx must be an update handler's. The
// write carries the update key for the change journal.
func nextWrite(ctx workflow.Context, m RowMark, at time.Time) store.Write {
	info := workflow.GetInfo(ctx)
	w := store.Write{Expect: m.Version, At: at}
	w.UpdateID = workflow.GetCurrentUpdateInfo(ctx).ID
	w.Update = store.UpdateKey(info.WorkflowExecution.ID, w.UpdateID)
	w.ID = fmt.Sprintf("%s#%d@%s", info.WorkflowExecution.ID, w.Version(), w.Update[:16])
	return w
}

// runWrite is nextWrite for a workflow that changes rows outside any update (a task batch): the
// change is named after the run, "<workflow id>#<new version>@<run id>".
func runWrite(ctx workflow.Context, m RowMark, at time.Time) store.Write {
	info := workflow.GetInfo(ctx)
	w := store.Write{Expect: m.Version, At: at}
	w.ID = fmt.Sprintf("%s#%d@%s", info.WorkflowExecution.ID, w.Version(), info.WorkflowExecution.RunID)
	return w
}

// batchWrite is the write of a chorus_create_tasks batch, which no update makes: its change is
// named after the batch's workflow id alone, "<workflow id>#1@<key>", key being the first 16
// hex digits of store.UpdateKey(workflow id, "batch"), so every run of the batch (a retry after
// a run that ended past its commit) names the same change and derives the same tasks.
func batchWrite(ctx workflow.Context, at time.Time) store.Write {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	w := store.Write{At: at}
	w.ID = fmt.Sprintf("%s#%d@%s", id, w.Version(), store.UpdateKey(id, "batch")[:16])
	return w
}

// mark is the row mark after w is applied.
func mark(w store.Write) RowMark { return RowMark{Version: w.Version(), ChangeID: w.ID} }

// derivedFrom makes an id for a row a change inserts (a round, a criterion, an activity row):
// the same for every retry of the change, different for every other change.
func derivedFrom(w store.Write, parts ...string) string {
	return DerivedUUID(append([]string{w.ID}, parts...)...)
}

// fingerprint keeps a caller-chosen id (a question's or an option's, up to 500 characters) in
// state as 16 hex digits.
func fingerprint(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}

// Recent update ids survive continue-as-new (docs/write-path.md, "Exactly once"): Temporal
// forgets them with the run, so each state carries its latest updates and their results.
const (
	maxRecent       = 32
	maxRecentResult = 4 << 10
)

// RecentUpdate is one update a workflow applied: its id and its result (omitted when larger
// than maxRecentResult).
type RecentUpdate struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Recent is the bounded list of the latest updates, oldest first.
type Recent []RecentUpdate

// find returns the update with id, if it is among the recent ones.
func (r Recent) find(id string) (RecentUpdate, bool) {
	i := slices.IndexFunc(r, func(u RecentUpdate) bool { return u.ID == id })
	if i < 0 {
		return RecentUpdate{}, false
	}
	return r[i], true
}

// add records an applied update, dropping the oldest beyond maxRecent.
func (r *Recent) add(id string, result any) {
	//workflowcheck:ignore (results are structs and slices: they marshal the same way every time)
	b, err := json.Marshal(result)
	if err != nil || len(b) > maxRecentResult {
		b = nil
	}
	*r = append(*r, RecentUpdate{ID: id, Result: b})
	if n := len(*r) - maxRecent; n > 0 {
		*r = slices.Delete(*r, 0, n)
	}
}
