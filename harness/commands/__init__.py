"""The `harness` subcommands, one module each: `run`, `hunt`, `repro` and `campaign` build tests and
hand them to the run engine; `setup` provisions an inventory's nodes and `doctor` says whether
they are ready; `teardown` cleans up after a crash; `report` and `serve` show stored runs;
`analyze` ingests them for cross-run tables; `agent` runs one broker agent. (`check` lives with the
checkers: checkers/command.py.)"""
