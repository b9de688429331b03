DROP TABLE temporal_binding;
