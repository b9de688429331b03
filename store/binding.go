package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// TemporalBinding is the Temporal cluster and namespace this database belongs to: what the first
// chorus serve or chorus dev start found (docs/write-path.md, "Check and repair"). Address is
// where it was reached then, for the operator's information only.
type TemporalBinding struct {
	ID          int       `bun:"id,pk"`
	ClusterID   string    `bun:"cluster_id"`
	ClusterName string    `bun:"cluster_name"`
	Namespace   string    `bun:"namespace"`
	NamespaceID string    `bun:"namespace_id"`
	Address     string    `bun:"address"`
	BoundAt     time.Time `bun:"bound_at"`
}

// TemporalBinding returns the recorded binding, nil when none was recorded yet.
func (s *Store) TemporalBinding(ctx context.Context) (*TemporalBinding, error) {
	var b TemporalBinding
	err := s.DB.NewSelect().Model(&b).ModelTableExpr("temporal_binding").Where("id = 1").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// BindTemporal records b as the binding when none is recorded yet (or replaces the recorded one
// when replace is set) and returns the binding recorded afterwards: b, or the one a start
// recorded before (a later start never overwrites it unless replace is set).
func (s *Store) BindTemporal(ctx context.Context, b TemporalBinding, replace bool) (TemporalBinding, error) {
	b.ID = 1
	if b.BoundAt.IsZero() {
		b.BoundAt = Now()
	}
	q := s.DB.NewInsert().Model(&b).ModelTableExpr("temporal_binding")
	if replace {
		q = q.On("CONFLICT (id) DO UPDATE").Set("cluster_id = EXCLUDED.cluster_id").Set("cluster_name = EXCLUDED.cluster_name").
			Set("namespace = EXCLUDED.namespace").Set("namespace_id = EXCLUDED.namespace_id").Set("address = EXCLUDED.address").
			Set("bound_at = EXCLUDED.bound_at")
	} else {
		q = q.On("CONFLICT (id) DO NOTHING")
	}
	if _, err := q.Exec(ctx); err != nil {
		return TemporalBinding{}, err
	}
	got, err := s.TemporalBinding(ctx)
	if err != nil {
		return TemporalBinding{}, err
	}
	if got == nil {
		return TemporalBinding{}, errors.New("store: the Temporal binding was not recorded")
	}
	return *got, nil
}
