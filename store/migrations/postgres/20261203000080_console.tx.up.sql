-- People in the console (docs/rules.md, "People in the console"): a company role per user, the
-- console's server-side sessions and its one-time sign-in links. Only digests of the session and
-- link tokens are stored; the tokens themselves live in the browser's cookie and the printed link.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('admin', 'member'));
-- A company's first user (the owner `chorus dev` or `chorus serve` bootstrapped) is its admin.
UPDATE users SET role = 'admin'
 WHERE created_at = (SELECT min(v.created_at) FROM users v WHERE v.company_uuid = users.company_uuid);

CREATE TABLE console_sessions (
    token_hash   TEXT PRIMARY KEY,
    company_uuid TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    user_uuid    TEXT NOT NULL REFERENCES users (uuid) ON DELETE CASCADE,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX console_sessions_user_idx ON console_sessions (user_uuid);

CREATE TABLE login_links (
    token_hash   TEXT PRIMARY KEY,
    company_uuid TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    user_uuid    TEXT NOT NULL REFERENCES users (uuid) ON DELETE CASCADE,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    used_at      TIMESTAMPTZ
);
CREATE INDEX login_links_user_idx ON login_links (user_uuid);
