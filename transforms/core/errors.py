"""The errors a user can fix (a config key, an input file, a folder that cannot be
written): the command line prints them as one line and exits 2 (pipelines/cli.py).

They live below the pipelines so that a transform or a reader that finds such a problem
(a crowd file without a required column, say) raises the same kind of error as a
preflight check, and never ends in a traceback."""


class UserError(Exception):
    """Raised with a message that says what to change."""


class InputError(UserError, ValueError):
    """An input file as a whole cannot be used (missing column, undecodable encoding,
    no rows): named in the message, raised before any work starts."""


class PreflightError(UserError, RuntimeError):
    """The run cannot start; the message says what to change."""


class ConfigError(UserError, ValueError):
    """A config file or override that does not match the benchmark's schema."""


class RunFailed(Exception):
    """The engine that ran the pipeline failed it (a cluster that lost more workers than
    it restarts, a job server that died): nothing was published. The command line prints
    the one-line message and exits 1; the engine's own logs hold the detail."""
