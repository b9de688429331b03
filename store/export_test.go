package store

// Test hooks for store_test.

// LockProject is lockProject, for tests of the project lock's strength.
var LockProject = lockProject
