DROP TABLE reference_artifacts;
