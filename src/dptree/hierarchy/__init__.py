"""Hierarchy counts on a public rooted tree (seed 001)."""
