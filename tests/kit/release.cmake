# Self-tests: release (filled in by its issue).
