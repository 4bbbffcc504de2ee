"""Exit codes and the error types that map onto them."""

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 254
EXIT_CRASH = 255


class UsageError(Exception):
    """Bad arguments or input: one line naming the file and line, the key path or the flag."""


class EnvironmentFailed(RuntimeError):
    """The environment failed (a node unreachable, a component or a Spark master that would not
    start or answer): nothing was decided about the system under test, so the verdict is unknown
    (exit 2), said in one line."""


def exit_code_for(valid: bool | str) -> int:
    if valid is True:
        return EXIT_VALID
    if valid is False:
        return EXIT_INVALID
    return EXIT_UNKNOWN


class RunInterrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM stopped a run after its partial history was collected and checked: callers
    unwind as from Ctrl-C (exit 130), and the message says where the run and its verdict are."""

    def __init__(self, run_dir: str, valid: bool | str) -> None:
        super().__init__(run_dir)
        self.run_dir = run_dir
        self.valid = valid
