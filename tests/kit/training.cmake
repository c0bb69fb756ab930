# Self-tests: training (filled in by its issue).
