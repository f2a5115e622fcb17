"""The b-ary range tree (seeds 000, 003, 004): layout, budget allocation, release, group-by."""
