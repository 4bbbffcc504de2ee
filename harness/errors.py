"""Exit codes and the error types that map onto them."""

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 254
EXIT_CRASH = 255


class UsageError(Exception):
    """Bad arguments or input: one line naming the file and line, the key path or the flag."""


def exit_code_for(valid: bool | str) -> int:
    if valid is True:
        return EXIT_VALID
    if valid is False:
        return EXIT_INVALID
    return EXIT_UNKNOWN
