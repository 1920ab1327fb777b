"""Errors of the trainer that a user can act on: one clear message (no traceback), exit status 2.

``msdoctor train`` recognises the line the trainer writes on stderr (:data:`MARK` + message) and
prints the message once instead of the end of the logs.
"""

EXIT_STATUS = 2
MARK = "msdoctor trainer: error: "


class TrainerError(Exception):
    """Bad input or a full disk: the message says what is wrong and what to do."""
