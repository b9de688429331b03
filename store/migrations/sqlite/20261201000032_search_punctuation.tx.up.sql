-- Nothing to do on SQLite: FTS5's unicode61 tokenizer already splits words at punctuation
-- (the PostgreSQL migration of the same name makes PostgreSQL do the same).
SELECT 1;
