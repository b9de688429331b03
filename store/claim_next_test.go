package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// A claim reservation (docs/rules.md §4.14) is held by one attempt at a time: another holder is
// refused while it lasts, its holder may renew it, and once released or lapsed anyone takes it.
func TestClaimReservations(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		got, err := st.ReserveClaim(ctx, "task-1", "a", time.Minute)
		require.NoError(t, err)
		require.True(t, got)

		got, err = st.ReserveClaim(ctx, "task-1", "b", time.Minute)
		require.NoError(t, err)
		require.False(t, got, "a live reservation keeps other attempts off the task")
		got, err = st.ReserveClaim(ctx, "task-2", "b", time.Minute)
		require.NoError(t, err)
		require.True(t, got, "reservations are per task")
		got, err = st.ReserveClaim(ctx, "task-1", "a", time.Minute)
		require.NoError(t, err)
		require.True(t, got, "the holder renews its own reservation")

		require.NoError(t, st.ReleaseClaim(ctx, "task-1", "b"), "releasing another's reservation does nothing")
		got, err = st.ReserveClaim(ctx, "task-1", "b", time.Minute)
		require.NoError(t, err)
		require.False(t, got)

		require.NoError(t, st.ReleaseClaim(ctx, "task-1", "a"))
		got, err = st.ReserveClaim(ctx, "task-1", "b", time.Millisecond)
		require.NoError(t, err)
		require.True(t, got, "a released task is free")

		time.Sleep(20 * time.Millisecond)
		got, err = st.ReserveClaim(ctx, "task-1", "c", time.Minute)
		require.NoError(t, err)
		require.True(t, got, "a lapsed reservation (its call died) is taken over")

		// A lapsed reservation of a task nobody asks for again goes with the next release.
		got, err = st.ReserveClaim(ctx, "task-3", "dead", time.Millisecond)
		require.NoError(t, err)
		require.True(t, got)
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, st.ReleaseClaim(ctx, "task-1", "c"))
		n, err := st.DB.NewSelect().Table("claim_reservations").Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "only task-2's live reservation is left")
	})
}
