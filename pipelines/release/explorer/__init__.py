"""The release explorer: `<version>/explorer/`, static pages to search and look at a
release (write.py writes them; assets/ holds the app)."""
