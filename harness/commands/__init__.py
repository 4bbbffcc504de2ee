"""The `harness` subcommands, one module each: `run`, `hunt` and `repro` build tests and hand them
to the run engine; `teardown` cleans up after a crash; `agent` runs one broker agent."""
