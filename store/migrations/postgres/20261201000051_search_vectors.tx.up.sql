-- chorus_search on PostgreSQL reads stored tsvectors (issue 18; docs/rules.md §4.12), as PostgreSQL's
-- manual advises ("Creating Indexes", 12.2.2): with indexes on the expression to_tsvector(text),
-- a plan that does not take the index (a small table, a project's index, an unanalyzed table)
-- recomputed the expression for every row it looked at, reading each text whole: 60 documents of
-- 400 KB took 24 s per search. search_vectors holds each searchable entity's tsvector, written by
-- triggers in the transaction of every write (as search_fts on SQLite), so a match costs a look at
-- a stored tsvector whatever the plan, and the GIN index serves the selective ones.
CREATE TABLE search_vectors (
    kind TEXT NOT NULL,
    uuid TEXT NOT NULL,
    vec  TSVECTOR NOT NULL,
    PRIMARY KEY (kind, uuid)
);
--bun:split
CREATE INDEX search_vectors_vec_idx ON search_vectors USING gin (vec);
--bun:split
-- The text as words, ASCII punctuation as separators (migration 20261201000032_search_punctuation).
CREATE FUNCTION chorus_search_vector(title TEXT, body TEXT) RETURNS TSVECTOR
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(body, ''), '[[:punct:]]+', ' ', 'g'))
$$;
--bun:split
CREATE FUNCTION tasks_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_vectors WHERE kind = 'task' AND uuid = OLD.uuid;
        RETURN OLD;
    END IF;
    INSERT INTO search_vectors (kind, uuid, vec) VALUES ('task', NEW.uuid, chorus_search_vector(NEW.title, NEW.description))
        ON CONFLICT (kind, uuid) DO UPDATE SET vec = EXCLUDED.vec;
    RETURN NEW;
END
$$;
--bun:split
CREATE TRIGGER tasks_search_insert AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION tasks_search_sync();
--bun:split
CREATE TRIGGER tasks_search_update AFTER UPDATE OF title, description ON tasks FOR EACH ROW
    WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.description IS DISTINCT FROM NEW.description) EXECUTE FUNCTION tasks_search_sync();
--bun:split
CREATE TRIGGER tasks_search_delete AFTER DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION tasks_search_sync();
--bun:split
INSERT INTO search_vectors (kind, uuid, vec) SELECT 'task', uuid, chorus_search_vector(title, description) FROM tasks;
--bun:split
DROP INDEX IF EXISTS tasks_search_idx;
--bun:split
CREATE FUNCTION ideas_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_vectors WHERE kind = 'idea' AND uuid = OLD.uuid;
        RETURN OLD;
    END IF;
    INSERT INTO search_vectors (kind, uuid, vec) VALUES ('idea', NEW.uuid, chorus_search_vector(NEW.title, NEW.content))
        ON CONFLICT (kind, uuid) DO UPDATE SET vec = EXCLUDED.vec;
    RETURN NEW;
END
$$;
--bun:split
CREATE TRIGGER ideas_search_insert AFTER INSERT ON ideas FOR EACH ROW EXECUTE FUNCTION ideas_search_sync();
--bun:split
CREATE TRIGGER ideas_search_update AFTER UPDATE OF title, content ON ideas FOR EACH ROW
    WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION ideas_search_sync();
--bun:split
CREATE TRIGGER ideas_search_delete AFTER DELETE ON ideas FOR EACH ROW EXECUTE FUNCTION ideas_search_sync();
--bun:split
INSERT INTO search_vectors (kind, uuid, vec) SELECT 'idea', uuid, chorus_search_vector(title, content) FROM ideas;
--bun:split
DROP INDEX IF EXISTS ideas_search_idx;
--bun:split
CREATE FUNCTION proposals_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_vectors WHERE kind = 'proposal' AND uuid = OLD.uuid;
        RETURN OLD;
    END IF;
    INSERT INTO search_vectors (kind, uuid, vec) VALUES ('proposal', NEW.uuid, chorus_search_vector(NEW.title, NEW.description))
        ON CONFLICT (kind, uuid) DO UPDATE SET vec = EXCLUDED.vec;
    RETURN NEW;
END
$$;
--bun:split
CREATE TRIGGER proposals_search_insert AFTER INSERT ON proposals FOR EACH ROW EXECUTE FUNCTION proposals_search_sync();
--bun:split
CREATE TRIGGER proposals_search_update AFTER UPDATE OF title, description ON proposals FOR EACH ROW
    WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.description IS DISTINCT FROM NEW.description) EXECUTE FUNCTION proposals_search_sync();
--bun:split
CREATE TRIGGER proposals_search_delete AFTER DELETE ON proposals FOR EACH ROW EXECUTE FUNCTION proposals_search_sync();
--bun:split
INSERT INTO search_vectors (kind, uuid, vec) SELECT 'proposal', uuid, chorus_search_vector(title, description) FROM proposals;
--bun:split
DROP INDEX IF EXISTS proposals_search_idx;
--bun:split
CREATE FUNCTION documents_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_vectors WHERE kind = 'document' AND uuid = OLD.uuid;
        RETURN OLD;
    END IF;
    INSERT INTO search_vectors (kind, uuid, vec) VALUES ('document', NEW.uuid, chorus_search_vector(NEW.title, NEW.content))
        ON CONFLICT (kind, uuid) DO UPDATE SET vec = EXCLUDED.vec;
    RETURN NEW;
END
$$;
--bun:split
CREATE TRIGGER documents_search_insert AFTER INSERT ON documents FOR EACH ROW EXECUTE FUNCTION documents_search_sync();
--bun:split
CREATE TRIGGER documents_search_update AFTER UPDATE OF title, content ON documents FOR EACH ROW
    WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION documents_search_sync();
--bun:split
CREATE TRIGGER documents_search_delete AFTER DELETE ON documents FOR EACH ROW EXECUTE FUNCTION documents_search_sync();
--bun:split
INSERT INTO search_vectors (kind, uuid, vec) SELECT 'document', uuid, chorus_search_vector(title, content) FROM documents;
--bun:split
DROP INDEX IF EXISTS documents_search_idx;
--bun:split
CREATE FUNCTION projects_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_vectors WHERE kind = 'project' AND uuid = OLD.uuid;
        RETURN OLD;
    END IF;
    INSERT INTO search_vectors (kind, uuid, vec) VALUES ('project', NEW.uuid, chorus_search_vector(NEW.name, NEW.description))
        ON CONFLICT (kind, uuid) DO UPDATE SET vec = EXCLUDED.vec;
    RETURN NEW;
END
$$;
--bun:split
CREATE TRIGGER projects_search_insert AFTER INSERT ON projects FOR EACH ROW EXECUTE FUNCTION projects_search_sync();
--bun:split
CREATE TRIGGER projects_search_update AFTER UPDATE OF name, description ON projects FOR EACH ROW
    WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.description IS DISTINCT FROM NEW.description) EXECUTE FUNCTION projects_search_sync();
--bun:split
CREATE TRIGGER projects_search_delete AFTER DELETE ON projects FOR EACH ROW EXECUTE FUNCTION projects_search_sync();
--bun:split
INSERT INTO search_vectors (kind, uuid, vec) SELECT 'project', uuid, chorus_search_vector(name, description) FROM projects;
--bun:split
DROP INDEX IF EXISTS projects_search_idx;
--bun:split
CREATE FUNCTION project_groups_search_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_vectors WHERE kind = 'group' AND uuid = OLD.uuid;
        RETURN OLD;
    END IF;
    INSERT INTO search_vectors (kind, uuid, vec) VALUES ('group', NEW.uuid, chorus_search_vector(NEW.name, NEW.description))
        ON CONFLICT (kind, uuid) DO UPDATE SET vec = EXCLUDED.vec;
    RETURN NEW;
END
$$;
--bun:split
CREATE TRIGGER project_groups_search_insert AFTER INSERT ON project_groups FOR EACH ROW EXECUTE FUNCTION project_groups_search_sync();
--bun:split
CREATE TRIGGER project_groups_search_update AFTER UPDATE OF name, description ON project_groups FOR EACH ROW
    WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.description IS DISTINCT FROM NEW.description) EXECUTE FUNCTION project_groups_search_sync();
--bun:split
CREATE TRIGGER project_groups_search_delete AFTER DELETE ON project_groups FOR EACH ROW EXECUTE FUNCTION project_groups_search_sync();
--bun:split
INSERT INTO search_vectors (kind, uuid, vec) SELECT 'group', uuid, chorus_search_vector(name, description) FROM project_groups;
--bun:split
DROP INDEX IF EXISTS project_groups_search_idx;
--bun:split
ANALYZE search_vectors;
