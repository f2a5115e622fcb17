"""The ``dptree`` command line."""
