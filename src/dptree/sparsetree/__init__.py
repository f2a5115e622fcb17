"""Sparse range trees over 64-bit key domains, in release order: keys, mechanism, plan,
estimates, release, document, api."""
