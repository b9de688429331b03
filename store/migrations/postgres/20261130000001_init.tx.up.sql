-- Chorus core schema (PostgreSQL). Kept column-for-column parallel with ../sqlite.
-- Every public id is a v4 uuid stored as text; timestamps are UTC.

CREATE TABLE companies (
    uuid          TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    email_domains JSONB NOT NULL DEFAULT '[]',
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE users (
    uuid         TEXT PRIMARY KEY,
    company_uuid TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    oidc_sub     TEXT NOT NULL,
    email        TEXT,
    name         TEXT,
    avatar_url   TEXT,
    created_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (company_uuid, oidc_sub)
);

CREATE TABLE agents (
    uuid           TEXT PRIMARY KEY,
    company_uuid   TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    roles          JSONB NOT NULL DEFAULT '["developer_agent"]',
    permissions    JSONB NOT NULL DEFAULT '[]',
    persona        TEXT,
    system_prompt  TEXT,
    owner_uuid     TEXT REFERENCES users (uuid) ON DELETE SET NULL,
    last_active_at TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX agents_company_idx ON agents (company_uuid);

CREATE TABLE api_keys (
    uuid         TEXT PRIMARY KEY,
    company_uuid TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    agent_uuid   TEXT NOT NULL REFERENCES agents (uuid) ON DELETE CASCADE,
    key_hash     TEXT NOT NULL UNIQUE,
    key_prefix   TEXT NOT NULL,
    name         TEXT,
    last_used_at TIMESTAMPTZ,
    expires_at   TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX api_keys_agent_idx ON api_keys (agent_uuid);
CREATE INDEX api_keys_prefix_idx ON api_keys (key_prefix);

CREATE TABLE project_groups (
    uuid            TEXT PRIMARY KEY,
    company_uuid    TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    visibility      TEXT NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'private')),
    created_by_uuid TEXT,
    access_version  INTEGER NOT NULL DEFAULT 0,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX project_groups_company_idx ON project_groups (company_uuid);

CREATE TABLE project_group_members (
    uuid          TEXT PRIMARY KEY,
    company_uuid  TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    group_uuid    TEXT NOT NULL REFERENCES project_groups (uuid) ON DELETE CASCADE,
    user_uuid     TEXT NOT NULL REFERENCES users (uuid) ON DELETE CASCADE,
    role          TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
    added_by_uuid TEXT,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (group_uuid, user_uuid)
);

CREATE TABLE projects (
    uuid            TEXT PRIMARY KEY,
    company_uuid    TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    description     TEXT,
    group_uuid      TEXT REFERENCES project_groups (uuid) ON DELETE SET NULL,
    visibility      TEXT NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'private')),
    created_by_uuid TEXT,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX projects_company_idx ON projects (company_uuid, updated_at);
CREATE INDEX projects_group_idx ON projects (group_uuid);

CREATE TABLE project_members (
    uuid          TEXT PRIMARY KEY,
    company_uuid  TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid  TEXT NOT NULL REFERENCES projects (uuid) ON DELETE CASCADE,
    user_uuid     TEXT NOT NULL REFERENCES users (uuid) ON DELETE CASCADE,
    role          TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
    added_by_uuid TEXT,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (project_uuid, user_uuid)
);

CREATE TABLE ideas (
    uuid               TEXT PRIMARY KEY,
    company_uuid       TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid       TEXT NOT NULL REFERENCES projects (uuid) ON DELETE CASCADE,
    title              TEXT NOT NULL,
    content            TEXT,
    attachments        JSONB,
    status             TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'elaborating', 'elaborated')),
    assignee_type      TEXT CHECK (assignee_type IN ('user', 'agent', 'agent_instance')),
    assignee_uuid      TEXT,
    assigned_at        TIMESTAMPTZ,
    assigned_by_uuid   TEXT,
    elaboration_depth  TEXT CHECK (elaboration_depth IN ('minimal', 'standard', 'comprehensive')),
    elaboration_status TEXT CHECK (elaboration_status IN ('pending_answers', 'validating', 'resolved')),
    is_container       BOOLEAN NOT NULL DEFAULT FALSE,
    parent_uuid        TEXT REFERENCES ideas (uuid) ON DELETE SET NULL,
    created_by_type    TEXT NOT NULL DEFAULT 'agent',
    created_by_uuid    TEXT NOT NULL,
    version            BIGINT NOT NULL DEFAULT 0,
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX ideas_project_idx ON ideas (project_uuid, created_at);
CREATE INDEX ideas_assignee_idx ON ideas (assignee_uuid);
CREATE INDEX ideas_parent_idx ON ideas (parent_uuid);

CREATE TABLE elaboration_rounds (
    uuid            TEXT PRIMARY KEY,
    company_uuid    TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    idea_uuid       TEXT NOT NULL REFERENCES ideas (uuid) ON DELETE CASCADE,
    round_number    INTEGER NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending_answers' CHECK (status IN ('pending_answers', 'answered')),
    is_appended     BOOLEAN NOT NULL DEFAULT FALSE,
    created_by_type TEXT NOT NULL,
    created_by_uuid TEXT NOT NULL,
    validated_at    TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (idea_uuid, round_number)
);

CREATE TABLE elaboration_questions (
    uuid               TEXT PRIMARY KEY,
    round_uuid         TEXT NOT NULL REFERENCES elaboration_rounds (uuid) ON DELETE CASCADE,
    question_id        TEXT NOT NULL,
    text               TEXT NOT NULL,
    category           TEXT NOT NULL,
    options            JSONB NOT NULL DEFAULT '[]',
    required           BOOLEAN NOT NULL DEFAULT TRUE,
    sort_order         INTEGER NOT NULL DEFAULT 0,
    selected_option_id TEXT,
    custom_text        TEXT,
    answered_at        TIMESTAMPTZ,
    answered_by_type   TEXT,
    answered_by_uuid   TEXT,
    issue_type         TEXT,
    issue_description  TEXT,
    UNIQUE (round_uuid, question_id)
);

CREATE TABLE proposals (
    uuid             TEXT PRIMARY KEY,
    company_uuid     TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid     TEXT NOT NULL REFERENCES projects (uuid) ON DELETE CASCADE,
    title            TEXT NOT NULL,
    description      TEXT,
    input_type       TEXT NOT NULL CHECK (input_type IN ('idea', 'document')),
    input_uuids      JSONB NOT NULL DEFAULT '[]',
    document_drafts  JSONB,
    task_drafts      JSONB,
    status           TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'pending', 'approved', 'closed')),
    created_by_uuid  TEXT NOT NULL,
    created_by_type  TEXT NOT NULL DEFAULT 'agent',
    reviewed_by_uuid TEXT,
    review_note      TEXT,
    reviewed_at      TIMESTAMPTZ,
    version          BIGINT NOT NULL DEFAULT 0,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX proposals_project_idx ON proposals (project_uuid, created_at);

CREATE TABLE documents (
    uuid            TEXT PRIMARY KEY,
    company_uuid    TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid    TEXT NOT NULL REFERENCES projects (uuid) ON DELETE CASCADE,
    type            TEXT NOT NULL CHECK (type IN ('prd', 'tech_design', 'adr', 'spec', 'guide', 'report')),
    title           TEXT NOT NULL,
    content         TEXT,
    version         INTEGER NOT NULL DEFAULT 1,
    proposal_uuid   TEXT,
    created_by_type TEXT NOT NULL DEFAULT 'agent',
    created_by_uuid TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX documents_project_idx ON documents (project_uuid, updated_at);
CREATE INDEX documents_proposal_idx ON documents (proposal_uuid);

CREATE TABLE tasks (
    uuid                TEXT PRIMARY KEY,
    company_uuid        TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid        TEXT NOT NULL REFERENCES projects (uuid) ON DELETE CASCADE,
    title               TEXT NOT NULL,
    description         TEXT,
    status              TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'assigned', 'in_progress', 'to_verify', 'done', 'closed')),
    priority            TEXT NOT NULL DEFAULT 'medium' CHECK (priority IN ('low', 'medium', 'high')),
    story_points        DOUBLE PRECISION,
    acceptance_criteria TEXT,
    assignee_type       TEXT CHECK (assignee_type IN ('user', 'agent', 'agent_instance')),
    assignee_uuid       TEXT,
    assigned_at         TIMESTAMPTZ,
    assigned_by_uuid    TEXT,
    proposal_uuid       TEXT,
    created_by_type     TEXT NOT NULL DEFAULT 'agent',
    created_by_uuid     TEXT NOT NULL,
    version             BIGINT NOT NULL DEFAULT 0,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX tasks_project_idx ON tasks (project_uuid, created_at);
CREATE INDEX tasks_proposal_idx ON tasks (proposal_uuid);
CREATE INDEX tasks_assignee_idx ON tasks (assignee_uuid);

CREATE TABLE acceptance_criteria (
    uuid               TEXT PRIMARY KEY,
    task_uuid          TEXT NOT NULL REFERENCES tasks (uuid) ON DELETE CASCADE,
    description        TEXT NOT NULL,
    required           BOOLEAN NOT NULL DEFAULT TRUE,
    dev_status         TEXT NOT NULL DEFAULT 'pending' CHECK (dev_status IN ('pending', 'passed', 'failed')),
    dev_evidence       TEXT,
    dev_marked_by_type TEXT,
    dev_marked_by      TEXT,
    dev_marked_at      TIMESTAMPTZ,
    status             TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'passed', 'failed')),
    evidence           TEXT,
    marked_by_type     TEXT,
    marked_by          TEXT,
    marked_at          TIMESTAMPTZ,
    sort_order         INTEGER NOT NULL DEFAULT 0,
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX acceptance_criteria_task_idx ON acceptance_criteria (task_uuid, sort_order);

CREATE TABLE task_dependencies (
    task_uuid       TEXT NOT NULL REFERENCES tasks (uuid) ON DELETE CASCADE,
    depends_on_uuid TEXT NOT NULL REFERENCES tasks (uuid) ON DELETE CASCADE,
    created_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (task_uuid, depends_on_uuid),
    CHECK (task_uuid <> depends_on_uuid)
);
CREATE INDEX task_dependencies_on_idx ON task_dependencies (depends_on_uuid);

CREATE TABLE comments (
    uuid         TEXT PRIMARY KEY,
    company_uuid TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    target_type  TEXT NOT NULL CHECK (target_type IN ('idea', 'proposal', 'task', 'document')),
    target_uuid  TEXT NOT NULL,
    content      TEXT NOT NULL,
    author_type  TEXT NOT NULL CHECK (author_type IN ('user', 'agent')),
    author_uuid  TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX comments_target_idx ON comments (target_type, target_uuid, created_at);

CREATE TABLE activities (
    uuid         TEXT PRIMARY KEY,
    company_uuid TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid TEXT NOT NULL,
    target_type  TEXT NOT NULL,
    target_uuid  TEXT NOT NULL,
    actor_type   TEXT NOT NULL,
    actor_uuid   TEXT NOT NULL,
    action       TEXT NOT NULL,
    value        JSONB,
    session_uuid TEXT,
    session_name TEXT,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX activities_project_idx ON activities (project_uuid, created_at);
CREATE INDEX activities_target_idx ON activities (target_type, target_uuid);

CREATE TABLE notifications (
    uuid           TEXT PRIMARY KEY,
    company_uuid   TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid   TEXT,
    recipient_type TEXT NOT NULL CHECK (recipient_type IN ('user', 'agent')),
    recipient_uuid TEXT NOT NULL,
    entity_type    TEXT NOT NULL,
    entity_uuid    TEXT NOT NULL,
    entity_title   TEXT NOT NULL DEFAULT '',
    project_name   TEXT NOT NULL DEFAULT '',
    action         TEXT NOT NULL,
    message        TEXT NOT NULL,
    actor_type     TEXT NOT NULL,
    actor_uuid     TEXT NOT NULL,
    actor_name     TEXT NOT NULL DEFAULT '',
    read_at        TIMESTAMPTZ,
    archived_at    TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX notifications_recipient_idx ON notifications (recipient_type, recipient_uuid, read_at, created_at);

-- D5: one row per (agent, requestId) of a mutating tool call; a retry returns result.
CREATE TABLE tool_requests (
    agent_uuid  TEXT NOT NULL REFERENCES agents (uuid) ON DELETE CASCADE,
    request_id  TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args_hash   TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('running', 'done')),
    result      JSONB,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (agent_uuid, request_id)
);
