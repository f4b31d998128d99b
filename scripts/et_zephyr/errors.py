# SPDX-License-Identifier: Apache-2.0
"""The one exception type et-export reports to users."""


class ExportError(Exception):
    """A problem with the user's input, told in one line.

    The CLI prints the message and exits non-zero; it never shows a traceback
    for these.
    """
