"""Privacy accounting: budgets, the release boundary (public vs noisy fields), the ledger."""
