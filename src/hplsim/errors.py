"""What users see when something is wrong: one error line, or warning lines.

Errors: `HplsimError`, printed by the CLI as ``hplsim: error: <message>`` (exit code
``exit_code``), never a traceback. Warnings: `warn`, printed at once as ``hplsim: warning:
<message>`` on stderr and kept, so that a command's ``--json`` output carries them under
``warnings`` (`with_warnings`). docs/errors.md lists the classes of errors.
"""

from __future__ import annotations

import sys
from typing import Any


class HplsimError(Exception):
    """A user-facing error (bad input, failed simulation, missing tool).

    The CLI prints ``hplsim: error: <message>`` and exits with ``exit_code``.
    """

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class Interrupted(BaseException):
    """SIGTERM or SIGHUP reached hplsim: raised where the program is, like KeyboardInterrupt
    for SIGINT, so that every `finally` runs (children killed, temporary folders removed)."""

    def __init__(self, signum: int):
        import signal

        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_issued: list[str] = []


def warn(message: str) -> None:
    """Say something the user must know but that does not stop the command."""
    text = " ".join(str(message).split())
    if text not in _issued:  # once per command, however many configurations repeat it
        _issued.append(text)
        print(f"hplsim: warning: {text}", file=sys.stderr, flush=True)


def warnings_issued() -> list[str]:
    return list(_issued)


def reset_warnings() -> None:
    _issued.clear()


def with_warnings(doc: Any) -> Any:
    """A command's JSON output with the warnings it issued: a top-level ``warnings`` list in
    an object; in a list of objects, in each object (each is a result of the same command)."""
    issued = warnings_issued()
    if isinstance(doc, dict):
        return {**doc, "warnings": issued}
    if isinstance(doc, list):
        return [{**d, "warnings": issued} if isinstance(d, dict) else d for d in doc]
    return doc
