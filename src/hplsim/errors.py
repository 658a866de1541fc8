"""The one exception type users see: a clear one-line message, never a traceback."""


class HplsimError(Exception):
    """A user-facing error (bad input, failed simulation, missing tool).

    The CLI prints ``hplsim: error: <message>`` and exits with ``exit_code``.
    """

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
