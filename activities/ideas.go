package activities

import (
	"context"

	"github.com/chorus-dev/chorus/store"
)

// ApplyIdeaChange writes one idea command's change by the write protocol (docs/write-path.md).
func (a *Activities) ApplyIdeaChange(ctx context.Context, c store.IdeaChange) error {
	return outcome(a.Store.ApplyIdeaChange(ctx, c))
}

// IdeaLineage reads what docs/rules.md §5.5 needs to accept parentUUID as the parent of ideaUUID.
func (a *Activities) IdeaLineage(ctx context.Context, companyUUID, ideaUUID, parentUUID string) (store.Lineage, error) {
	return a.Store.IdeaLineage(ctx, companyUUID, ideaUUID, parentUUID)
}
