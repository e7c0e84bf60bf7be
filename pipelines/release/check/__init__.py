"""Checking a release: `verify` (against its MANIFEST.json), `diff` (two versions, row by
row by the tables' keys), and digests that ignore row order and sharding."""
