-- Full-text search for chorus_search (docs/rules.md §4.11) on SQLite: one FTS5 index over the
-- searchable text of tasks, ideas, proposals, documents, projects and project groups, kept current
-- by triggers in the transaction of every write, whoever makes it (workflow activities, record
-- writes, approval and revoke cascades, ops repair). search_keys gives each entity a stable
-- integer key, the FTS row's rowid: the entity tables' own rowids are not stable (their primary key
-- is a text uuid, and VACUUM may renumber implicit rowids). The tokenizer is unicode61 without
-- diacritic folding: words are runs of letters and digits, matched in any case.
CREATE TABLE search_keys (
    id   INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    uuid TEXT NOT NULL,
    UNIQUE (kind, uuid)
);
--bun:split
CREATE VIRTUAL TABLE search_fts USING fts5(kind UNINDEXED, title, body, tokenize = 'unicode61 remove_diacritics 0');
--bun:split
CREATE TRIGGER tasks_search_insert AFTER INSERT ON tasks BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'task' AND uuid = new.uuid);
    DELETE FROM search_keys WHERE kind = 'task' AND uuid = new.uuid;
    INSERT INTO search_keys (kind, uuid) VALUES ('task', new.uuid);
    INSERT INTO search_fts (rowid, kind, title, body) VALUES (last_insert_rowid(), 'task', new.title, coalesce(new.description, ''));
END;
--bun:split
CREATE TRIGGER tasks_search_update AFTER UPDATE OF title, description ON tasks BEGIN
    UPDATE search_fts SET title = new.title, body = coalesce(new.description, '') WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'task' AND uuid = new.uuid);
END;
--bun:split
CREATE TRIGGER tasks_search_delete AFTER DELETE ON tasks BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'task' AND uuid = old.uuid);
    DELETE FROM search_keys WHERE kind = 'task' AND uuid = old.uuid;
END;
--bun:split
INSERT INTO search_keys (kind, uuid) SELECT 'task', uuid FROM tasks;
--bun:split
INSERT INTO search_fts (rowid, kind, title, body)
    SELECT k.id, 'task', x.title, coalesce(x.description, '') FROM tasks x JOIN search_keys k ON k.kind = 'task' AND k.uuid = x.uuid;
--bun:split
CREATE TRIGGER ideas_search_insert AFTER INSERT ON ideas BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'idea' AND uuid = new.uuid);
    DELETE FROM search_keys WHERE kind = 'idea' AND uuid = new.uuid;
    INSERT INTO search_keys (kind, uuid) VALUES ('idea', new.uuid);
    INSERT INTO search_fts (rowid, kind, title, body) VALUES (last_insert_rowid(), 'idea', new.title, coalesce(new.content, ''));
END;
--bun:split
CREATE TRIGGER ideas_search_update AFTER UPDATE OF title, content ON ideas BEGIN
    UPDATE search_fts SET title = new.title, body = coalesce(new.content, '') WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'idea' AND uuid = new.uuid);
END;
--bun:split
CREATE TRIGGER ideas_search_delete AFTER DELETE ON ideas BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'idea' AND uuid = old.uuid);
    DELETE FROM search_keys WHERE kind = 'idea' AND uuid = old.uuid;
END;
--bun:split
INSERT INTO search_keys (kind, uuid) SELECT 'idea', uuid FROM ideas;
--bun:split
INSERT INTO search_fts (rowid, kind, title, body)
    SELECT k.id, 'idea', x.title, coalesce(x.content, '') FROM ideas x JOIN search_keys k ON k.kind = 'idea' AND k.uuid = x.uuid;
--bun:split
CREATE TRIGGER proposals_search_insert AFTER INSERT ON proposals BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'proposal' AND uuid = new.uuid);
    DELETE FROM search_keys WHERE kind = 'proposal' AND uuid = new.uuid;
    INSERT INTO search_keys (kind, uuid) VALUES ('proposal', new.uuid);
    INSERT INTO search_fts (rowid, kind, title, body) VALUES (last_insert_rowid(), 'proposal', new.title, coalesce(new.description, ''));
END;
--bun:split
CREATE TRIGGER proposals_search_update AFTER UPDATE OF title, description ON proposals BEGIN
    UPDATE search_fts SET title = new.title, body = coalesce(new.description, '') WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'proposal' AND uuid = new.uuid);
END;
--bun:split
CREATE TRIGGER proposals_search_delete AFTER DELETE ON proposals BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'proposal' AND uuid = old.uuid);
    DELETE FROM search_keys WHERE kind = 'proposal' AND uuid = old.uuid;
END;
--bun:split
INSERT INTO search_keys (kind, uuid) SELECT 'proposal', uuid FROM proposals;
--bun:split
INSERT INTO search_fts (rowid, kind, title, body)
    SELECT k.id, 'proposal', x.title, coalesce(x.description, '') FROM proposals x JOIN search_keys k ON k.kind = 'proposal' AND k.uuid = x.uuid;
--bun:split
CREATE TRIGGER documents_search_insert AFTER INSERT ON documents BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'document' AND uuid = new.uuid);
    DELETE FROM search_keys WHERE kind = 'document' AND uuid = new.uuid;
    INSERT INTO search_keys (kind, uuid) VALUES ('document', new.uuid);
    INSERT INTO search_fts (rowid, kind, title, body) VALUES (last_insert_rowid(), 'document', new.title, coalesce(new.content, ''));
END;
--bun:split
CREATE TRIGGER documents_search_update AFTER UPDATE OF title, content ON documents BEGIN
    UPDATE search_fts SET title = new.title, body = coalesce(new.content, '') WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'document' AND uuid = new.uuid);
END;
--bun:split
CREATE TRIGGER documents_search_delete AFTER DELETE ON documents BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'document' AND uuid = old.uuid);
    DELETE FROM search_keys WHERE kind = 'document' AND uuid = old.uuid;
END;
--bun:split
INSERT INTO search_keys (kind, uuid) SELECT 'document', uuid FROM documents;
--bun:split
INSERT INTO search_fts (rowid, kind, title, body)
    SELECT k.id, 'document', x.title, coalesce(x.content, '') FROM documents x JOIN search_keys k ON k.kind = 'document' AND k.uuid = x.uuid;
--bun:split
CREATE TRIGGER projects_search_insert AFTER INSERT ON projects BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'project' AND uuid = new.uuid);
    DELETE FROM search_keys WHERE kind = 'project' AND uuid = new.uuid;
    INSERT INTO search_keys (kind, uuid) VALUES ('project', new.uuid);
    INSERT INTO search_fts (rowid, kind, title, body) VALUES (last_insert_rowid(), 'project', new.name, coalesce(new.description, ''));
END;
--bun:split
CREATE TRIGGER projects_search_update AFTER UPDATE OF name, description ON projects BEGIN
    UPDATE search_fts SET title = new.name, body = coalesce(new.description, '') WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'project' AND uuid = new.uuid);
END;
--bun:split
CREATE TRIGGER projects_search_delete AFTER DELETE ON projects BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'project' AND uuid = old.uuid);
    DELETE FROM search_keys WHERE kind = 'project' AND uuid = old.uuid;
END;
--bun:split
INSERT INTO search_keys (kind, uuid) SELECT 'project', uuid FROM projects;
--bun:split
INSERT INTO search_fts (rowid, kind, title, body)
    SELECT k.id, 'project', x.name, coalesce(x.description, '') FROM projects x JOIN search_keys k ON k.kind = 'project' AND k.uuid = x.uuid;
--bun:split
CREATE TRIGGER project_groups_search_insert AFTER INSERT ON project_groups BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'group' AND uuid = new.uuid);
    DELETE FROM search_keys WHERE kind = 'group' AND uuid = new.uuid;
    INSERT INTO search_keys (kind, uuid) VALUES ('group', new.uuid);
    INSERT INTO search_fts (rowid, kind, title, body) VALUES (last_insert_rowid(), 'group', new.name, coalesce(new.description, ''));
END;
--bun:split
CREATE TRIGGER project_groups_search_update AFTER UPDATE OF name, description ON project_groups BEGIN
    UPDATE search_fts SET title = new.name, body = coalesce(new.description, '') WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'group' AND uuid = new.uuid);
END;
--bun:split
CREATE TRIGGER project_groups_search_delete AFTER DELETE ON project_groups BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_keys WHERE kind = 'group' AND uuid = old.uuid);
    DELETE FROM search_keys WHERE kind = 'group' AND uuid = old.uuid;
END;
--bun:split
INSERT INTO search_keys (kind, uuid) SELECT 'group', uuid FROM project_groups;
--bun:split
INSERT INTO search_fts (rowid, kind, title, body)
    SELECT k.id, 'group', x.name, coalesce(x.description, '') FROM project_groups x JOIN search_keys k ON k.kind = 'group' AND k.uuid = x.uuid;
