"""Errors that are the user's to fix, reported as one line without a traceback."""


class UserError(Exception):
    """Bad input: the message names the problem and what to do about it."""
