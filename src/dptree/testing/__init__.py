"""The privacy-audit harness (generic; mechanism registrations live in tests/)."""
