"""Sparse range trees over 64-bit key domains (issue 15), in release order: keys, mechanism, plan,
estimates, release, document, api."""
