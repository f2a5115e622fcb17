"""Outputs: the release-file format and pandas tables."""
