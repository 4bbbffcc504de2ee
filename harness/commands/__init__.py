"""The `harness` subcommands, one module each: `run`, `hunt`, `repro` and `campaign` build tests and
hand them to the run engine; `setup` provisions an inventory's nodes and `doctor` says whether
they are ready; `teardown` cleans up after a crash; `report` and `serve` show stored runs;
`analyze` ingests them for cross-run tables; `check` and `check-server` judge histories with the
checkers; `agent` runs one broker agent. A command imports the layers below it, never ``harness.cli``,
which loads it from its table."""
