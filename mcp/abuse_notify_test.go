package mcp

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
)

// A developer key comments 200 times at once on one document, each comment mentioning a chosen
// agent: the victim and the document's creator each end with one unread notification from it
// (docs/rules.md §7.2, coalescing), holding the latest text, and the victim's real notifications
// stay in view. Once the victim has read it, the next comment notifies again.
func TestCommentFloodYieldsBoundedNotifications(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.member("PM", e.owner, perm.PMAgent)
		victim := e.member("Victim", e.owner, perm.DeveloperAgent)
		flooder := e.member("Flooder", e.owner, perm.DeveloperAgent)
		colleague := e.member("Colleague", e.owner, perm.DeveloperAgent)
		project := createProject(t, admin, "Apollo")
		doc := createDocument(t, pm.s, project)
		other := createDocument(t, pm.s, project)
		at := mention("Victim", "agent", victim.uuid)

		// Real notifications first: a colleague mentions the victim on two documents.
		for _, d := range []string{doc, other} {
			ok(t, colleague.s, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": d,
				"content": "please review " + at}, nil)
		}

		const flood = 200
		var wg sync.WaitGroup
		for i := range flood {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := call(t, flooder.s, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": doc,
					"content": fmt.Sprintf("spam %d %s", i, at)})
				require.False(t, res.IsError, text(res))
			}()
		}
		wg.Wait()
		require.Equal(t, flood+2, countRows(t, e, "comments"), "every comment is kept")

		fromFlooder := func(recipient string) int {
			return countRows(t, e, "notifications WHERE recipient_uuid = ? AND actor_uuid = ? AND read_at IS NULL",
				recipient, flooder.uuid)
		}
		require.Equal(t, 1, fromFlooder(victim.uuid), "one mention notification for the whole flood")
		require.Equal(t, 1, fromFlooder(pm.uuid), "one comment_added notification for the document's creator")
		ns := notes(t, e, "agent", victim.uuid)
		require.Len(t, ns, 3, "two real mentions and one for the flood: %v", actions(ns))

		// The victim's check-in shows the real ones beside the flood.
		var in CheckinOut
		ok(t, victim.s, "chorus_checkin", nil, &in)
		require.Len(t, in.Notifications.Recent, 3)
		senders := map[string]int{}
		for _, n := range in.Notifications.Recent {
			senders[n.Actor]++
		}
		require.Equal(t, map[string]int{"Colleague": 2, "Flooder": 1}, senders)

		// Read (the check-in marked them), so the next comment is news again.
		ok(t, flooder.s, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": doc,
			"content": "one more " + at}, nil)
		require.Equal(t, 1, fromFlooder(victim.uuid))
		require.Equal(t, 4, len(notes(t, e, "agent", victim.uuid)))
	})
}
