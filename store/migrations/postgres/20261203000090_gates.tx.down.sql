DROP TABLE gate_requests;
DROP TABLE gate_policies;
