DROP TABLE claim_next_attempts;
