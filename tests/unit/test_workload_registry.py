"""The workload registry (``workloads.DEFINITIONS``): every workload module that declares a
``DEFINITION`` is in it, each builds with its own options' defaults, its checkers are registered,
and `harness run` offers exactly the options the workloads declare. Failures name what is missing."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import workloads
from checkers.project import CHECKER_NAMES
from harness.cli import build_parser
from workloads import DEFINITIONS


def declared() -> dict[str, str]:
    """Workload name → the module declaring it, for every module of the package with a DEFINITION."""
    out = {}
    for m in pkgutil.iter_modules([str(Path(workloads.__file__).parent)]):
        mod = importlib.import_module(f"workloads.{m.name}")
        if hasattr(mod, "DEFINITION"):
            out[mod.DEFINITION.name] = mod.__name__
    return out


def test_every_declared_workload_is_registered() -> None:
    missing = {n: m for n, m in declared().items() if n not in DEFINITIONS}
    assert not missing, "".join(f"{m} declares workload {n!r} but workloads.DEFINITIONS has no line for it; "
                                for n, m in missing.items())


def test_every_workload_builds_with_its_defaults_and_names_registered_checkers() -> None:
    for name, d in DEFINITIONS.items():
        w = d.make()
        assert w.name == name and w.concurrency == d.concurrency, name
        unknown = [c for c in w.checkers if c not in CHECKER_NAMES]
        assert not unknown, f"workload {name} names checkers {unknown} that checkers.project does not register"


def test_run_offers_every_declared_option_once() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")  # noqa: SLF001 - argparse's own table
    run = sub.choices["run"]
    flags = {s for a in run._actions for s in a.option_strings}  # noqa: SLF001
    options = [o for d in DEFINITIONS.values() for o in d.options]
    missing = [o.flag for o in options if o.flag not in flags]
    assert not missing, f"harness run has no flag {missing}"
    names = [o.name for o in options]
    assert len(names) == len(set(names)), f"two workloads declare the same option: {names}"


def test_a_workload_option_reaches_its_build() -> None:
    from harness.commands.run import workload_from_args

    args = build_parser().parse_args(["run", "--workload", "register", "--reads", "plain", "--concurrency", "2"])
    w = workload_from_args(args)
    assert w.name == "register" and w.concurrency == 2 and w.generator.reads == "plain"  # type: ignore[union-attr]
    args = build_parser().parse_args(["run", "--workload", "queue", "--acks", "1"])
    w = workload_from_args(args)
    assert w.concurrency == 12 and w.generator.acks == "1"  # type: ignore[union-attr]
