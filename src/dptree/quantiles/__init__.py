"""Quantiles of a private column: several methods behind one call (issue 12)."""
