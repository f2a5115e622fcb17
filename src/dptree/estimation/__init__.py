"""Estimation shared by both tree products: least squares, exact variances, intervals, post-processing."""
