"""The errors a user can fix (a config key, an input path, a version that exists): a
pipeline's command line prints them as one line and exits 2 (pipelines/cli.py)."""


class UserError(Exception):
    """Raised with a message that says what to change."""
