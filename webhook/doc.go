// Package webhook holds what both ends of a webhook delivery agree on (docs/rules.md §7.5,
// docs/security.md "Webhooks"): where Chorus may send one (Policy, the outbound allow-list,
// checked when a webhook is added and again at each dial, on the address actually dialled), how a
// delivery is signed (Sign, Verify) and how a secret is made (NewSecret). It imports nothing of
// Chorus, so the app (add time) and the activities (delivery time) use the one policy.
package webhook
