"""Interior points, quantiles and thresholds (seed 002)."""
