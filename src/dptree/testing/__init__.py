"""The privacy-audit harness, generic: :mod:`~dptree.testing.audit` (the audit; re-exports the
rest), :mod:`~dptree.testing.registry`, :mod:`~dptree.testing.statistics` and
:mod:`~dptree.testing.sensitivity`. The mechanism registrations live in ``tests/audit_registry/``."""
