"""Tests of pipelines/release/, by its jobs: write/, cards/, check/, explorer/; beside them the
helpers other tests use too (release_files.py: a release read as a stranger would;
chromium.py: a headless browser)."""
