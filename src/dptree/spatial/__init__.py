"""2-D range trees (quadtrees over a public grid in Morton order), in release order: grid, plan,
estimates, counting, release, api."""
