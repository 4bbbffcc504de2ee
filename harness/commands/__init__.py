"""CLI subcommands of the control node (`harness run`, `harness teardown`, `harness agent`)."""
