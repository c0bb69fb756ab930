# Self-tests: cost_analysis (filled in by its issue).
