"""The errors a user can fix; defined in transforms/core/errors.py so that transforms raise
them too. Re-exported here for the pipelines."""
from transforms.core.errors import InputError, UserError

__all__ = ["InputError", "UserError"]
