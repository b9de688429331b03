DROP TABLE claim_reservations;
