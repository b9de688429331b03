DROP TABLE change_journal;
