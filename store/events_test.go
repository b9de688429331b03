package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// Many writers commit events at once while two processes number them: every event gets exactly
// one id, the ids are 1..N with no gap, and a retried write (the same seed) adds no event.
func TestEventsAreNumberedOnceWithoutGaps(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.NewDSN(t, dialect)
			a, b := storetest.OpenDSN(t, dsn), storetest.OpenDSN(t, dsn)
			boot, err := a.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme"})
			require.NoError(t, err)
			const writers, each = 8, 15
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for _, st := range []*store.Store{a, b} { // two sequencers, racing the writers and each other
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := st.SequenceEvents(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			var writes sync.WaitGroup
			for w := range writers {
				writes.Add(1)
				go func() {
					defer writes.Done()
					st := []*store.Store{a, b}[w%2]
					for i := range each {
						for range 2 { // each write twice: a retried activity
							err := st.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
								return store.InsertNotifications(ctx, tx, boot.Company.UUID, store.NotifySpec{
									Seed: fmt.Sprintf("w%d-%d", w, i), Action: "mentioned", EntityType: "task",
									EntityUUID: "t", ActorType: "agent", ActorUUID: boot.Agent.UUID,
									Recipients: []store.Recipient{{Type: "user", UUID: boot.Owner.UUID}}})
							})
							if err != nil {
								t.Error(err)
								return
							}
						}
					}
				}()
			}
			writes.Wait()
			close(stop)
			wg.Wait()
			top, err := a.SequenceEvents(ctx)
			require.NoError(t, err)
			require.EqualValues(t, writers*each, top)
			evs, err := a.EventsAfter(ctx, "", 0, 1000, store.EventFilter{})
			require.NoError(t, err)
			require.Len(t, evs, writers*each)
			seen := map[string]bool{}
			for i, ev := range evs {
				require.EqualValues(t, i+1, ev.Seq, "ids are 1..N in order, no gap")
				require.False(t, seen[ev.UUID], "an event numbered twice")
				seen[ev.UUID] = true
			}
		})
	}
}
