// Package console is the web console for people: a second front end over the use cases in
// package app, beside the MCP endpoint (package mcp). It serves server-rendered pages under
// /console (html/template, one stylesheet, a few lines of plain JavaScript, no build step), and
// every action is a plain form post that calls the same use case as the MCP tool that does it:
// same checks, same refusal text, same workflow command, attributed to the person as the actor.
//
// Sign-in is by one-time link (chorus user login-link) or OpenID Connect; sessions are
// server-side rows (store.ConsoleSession) behind an HttpOnly, SameSite=Lax cookie, and every
// form carries a CSRF token bound to the session. A form's hidden requestId is the use case's
// idempotency key, so a double submit applies once (docs/rules.md, "People in the console").
package console
