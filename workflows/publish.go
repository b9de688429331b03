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
}

// publishShown upserts what changed of s: the search attributes whose value differs from the
// workflow's current ones (a set attribute missing from the workflow, e.g. ChorusTitle on a
// workflow started before it existed, counts as changed), and the memo when one of its entries
// differs. Runs recorded before publishChangesOnly upsert everything, as they did.
func publishShown(ctx workflow.Context, s shown) {
	changesOnly := workflow.GetVersion(ctx, publishChangesOnly, workflow.DefaultVersion, 1) >= 1
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
	if !changesOnly || !memoShown(ctx, s.memo) {
		_ = workflow.UpsertMemo(ctx, s.memo)
	}
}

// memoShown says whether the workflow's memo already holds every entry of memo (a nil entry:
// holds no such key). A memo it cannot read counts as different.
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
