"""The console the commands print their summaries and tables to (rich).

On a terminal, its width. Elsewhere (a nightly job's log, a pipe, CI) rich assumes 80 columns,
which folds a table of nine columns into fragments of four characters ("queu/e", "p50_/ms"); there
the console is 200 wide, so a table keeps its own width and a summary line stays one line. A
``COLUMNS`` in the environment is the user's choice and wins either way.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console

LOG_WIDTH = 200


def output_console(**options: Any) -> Console:  # noqa: ANN401 - rich's Console options, passed through
    """A rich Console on stdout (whichever it is when printing, as rich's default), ``LOG_WIDTH`` wide
    when stdout is no terminal and COLUMNS is unset."""
    wide = not sys.stdout.isatty() and not os.environ.get("COLUMNS", "").isdigit()
    return Console(width=LOG_WIDTH if wide else None, **options)
