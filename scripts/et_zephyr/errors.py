# SPDX-License-Identifier: Apache-2.0
"""The one exception type et-export reports to users, and how errors are told in one line."""


class ExportError(Exception):
    """A problem with the user's input, told in one line.

    The CLI prints the message and exits non-zero; it never shows a traceback
    for these.
    """


def first_line(error: BaseException) -> str:
    """An exception's message in one line (its type where it has none)."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
