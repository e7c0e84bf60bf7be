"""Writing a release (every benchmark): staging and locks, the tables' files per split in
a declared order, relative paths, the manifest, then the rename (assemble.py)."""
