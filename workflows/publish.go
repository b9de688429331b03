package workflows

import (
	"reflect"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// publishChangesOnly is the workflow.GetVersion change id of an entity workflow upserting, after
// a commit, only the search attributes and memo entries whose value changed. Before it (runs
// that recorded DefaultVersion), every commit upserted all of them and the whole memo: two
// events per command, most of them repeating what the workflow already showed.
const publishChangesOnly = "publish-changes-only"

// shown is what an entity workflow shows operators after a commit: its search attributes
// (Keyword values by attribute; an absent attribute is unset) and its memo.
type shown struct {
	keywords map[string]string
	unset    []temporal.SearchAttributeKeyKeyword
	memo     map[string]any // publishedMemo: a nil value removes the key
	// mark is what memo shows, and last is where the run keeps the mark of its last memo
	// (runs that took publishDigestChange).
	mark memoMark
	last *memoMark
}

// memoMark is what an entity workflow's memo shows: the title, the project's name, and the row
// version whose digest it holds (holds false: no digest). A run decides whether to upsert its
// memo by comparing marks, never by reading the memo's payloads back: with payload encryption
// they are sealed, and a run replayed with other keys than it ran with would decide otherwise.
type memoMark struct {
	set            bool // the run has a mark (its first publish sets it)
	title, project string
	version        int64
	holds          bool
}

// newMemoMark is the mark of the memo of an entity titled title, in project projectName, at row
// version, holding its digest when holds.
func newMemoMark(title, projectName string, version int64, holds bool) memoMark {
	return memoMark{set: true, title: title, project: projectName, version: version, holds: holds}
}

// publishShown upserts what changed of s: the search attributes whose value differs from the
// workflow's current ones (a set attribute missing from the workflow, e.g. ChorusTitle on a
// workflow started before it existed, counts as changed), and the memo when one of its entries
// differs (memoMark). Runs recorded before publishChangesOnly upsert everything, as they did;
// runs recorded before publishDigestChange leave the memo's digest and version out and compare
// the memo's entries (memoShown).
func publishShown(ctx workflow.Context, s shown) {
	changesOnly := workflow.GetVersion(ctx, publishChangesOnly, workflow.DefaultVersion, 1) >= 1
	digests := workflow.GetVersion(ctx, publishDigestChange, workflow.DefaultVersion, 1) >= 1
	if !digests {
		delete(s.memo, MemoDigest) // a run recorded before the memo kept them
		delete(s.memo, MemoVersion)
	}
	current := workflow.GetTypedSearchAttributes(ctx)
	if have, ok := current.GetKeyword(TitleKey); ok && have == SealedTitle {
		SealKeywords(s.keywords)
	}
	var updates []temporal.SearchAttributeUpdate
	for _, k := range SearchAttributeKeys { // in a fixed order
		v, want := s.keywords[k.GetName()]
		if !want {
			continue
		}
		if have, ok := current.GetKeyword(k); changesOnly && ok && have == v {
			continue
		}
		updates = append(updates, k.ValueSet(v))
	}
	for _, k := range s.unset {
		if _, ok := current.GetKeyword(k); changesOnly && !ok {
			continue
		}
		updates = append(updates, k.ValueUnset())
	}
	if len(updates) > 0 {
		_ = workflow.UpsertTypedSearchAttributes(ctx, updates...)
	}
	switch {
	case digests:
		if !s.last.set {
			// The run's first publish: a memo holding a digest was started with this state's
			// (StartFromState, a task's first state, continue-as-new, a reset to this point).
			_, holds := workflow.GetInfo(ctx).Memo.GetFields()[MemoDigest]
			if holds == s.mark.holds {
				*s.last = s.mark
				return
			}
		}
		if *s.last != s.mark {
			_ = workflow.UpsertMemo(ctx, s.memo)
			*s.last = s.mark
		}
	case !changesOnly || !memoShown(ctx, s.memo):
		_ = workflow.UpsertMemo(ctx, s.memo)
	}
}

// memoShown says whether the workflow's memo already holds every entry of memo (a nil entry:
// holds no such key). A memo it cannot read counts as different. Runs recorded before
// publishDigestChange decide with it; later ones with memoMark, which reads no payload.
func memoShown(ctx workflow.Context, memo map[string]any) bool {
	fields := workflow.GetInfo(ctx).Memo.GetFields()
	keys := make([]string, 0, len(memo))
	//workflowcheck:ignore (the keys are sorted before use)
	for k := range memo {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		want := memo[k]
		p, ok := fields[k]
		if want == nil {
			if ok && p.GetData() != nil {
				return false
			}
			continue
		}
		if !ok {
			return false
		}
		got := reflect.New(reflect.TypeOf(want))
		//workflowcheck:ignore (comparing two decoded values has one answer)
		if err := DataConverter().FromPayload(p, got.Interface()); err != nil || !reflect.DeepEqual(got.Elem().Interface(), want) {
			return false
		}
	}
	return true
}
