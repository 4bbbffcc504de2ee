"""Fuzzing the harness's input surfaces in process, against the real parsers (no cluster): every
command's flags, scripted schedules, campaign files, inventories and EDN histories.

Each ``surface_*(rng, n)`` feeds ``n`` generated inputs (well-formed ones with absurd values,
wrong types and nesting, and byte-level mutations of good files) and counts what became of them:
a clean refusal is the project's one-line ``UsageError`` (or argparse's exit 254, or the EDN
reader's ``EdnError`` naming file:line); a crash is any other exception; a hang is an input judged
in more than ``HANG_S``; a wrong acceptance is an accepted input that breaks what the surface
promises (a non-finite or out-of-bounds number, a plan or schedule over its limit, a name outside
the inventory). ``SURFACES`` maps each name to its function for ``bench/fuzz.py``.

    PYTHONPATH=. python bench/fuzz_inputs.py [--n 10000] [--seed 1] [--only flags:run,edn]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from base.bounds import MAX_PLAN_RUNS, MAX_SCHEDULE_STEPS, finite_float  # noqa: E402
from base.errors import UsageError  # noqa: E402
from bench.fuzz_values import edn_text, flag_argv, random_campaign, random_inventory, random_schedule  # noqa: E402
from checkers.edn import EdnError, read_all  # noqa: E402

HANG_S = 2.0  # the bound: every surface refuses (or accepts) within 2 s


@dataclass
class Counts:
    """What became of one surface's inputs; ``examples`` keeps the first input of each bad kind."""

    surface: str
    inputs: int = 0
    refusals: int = 0
    accepted: int = 0
    crashes: int = 0
    hangs: int = 0
    wrong: int = 0
    examples: dict[str, str] = field(default_factory=dict)

    def note(self, kind: str, what: str) -> None:
        self.examples.setdefault(kind, what[:300])


class _Hang(BaseException):
    """Raised by the interval timer in the input that overstays ``HANG_S`` (BaseException: no
    ``except Exception`` in the code under test swallows it)."""


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise _Hang

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _judge(c: Counts, shown: str, fn: Callable[[], str | None], clean: tuple[type[BaseException], ...]) -> None:
    """Run one input: ``fn`` returns None (accepted and sound) or why its acceptance is wrong."""
    c.inputs += 1
    try:
        with _deadline(HANG_S), contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            why = fn()
    except _Hang:
        c.hangs += 1
        c.note("hang", shown)
        return
    except SystemExit as e:
        if e.code == 254:
            c.refusals += 1
        else:
            c.crashes += 1
            c.note("crash", f"exit {e.code}: {shown}")
        return
    except clean as e:
        msg = str(e)
        if "\n" in msg or not msg:
            c.crashes += 1
            c.note("crash", f"not one line: {msg[:120]!r}: {shown}")
        else:
            c.refusals += 1
        return
    except Exception as e:  # noqa: BLE001 - a crash is what is counted here
        c.crashes += 1
        c.note("crash", f"{type(e).__name__}: {str(e)[:120]}: {shown}")
        return
    if why is None:
        c.accepted += 1
    else:
        c.wrong += 1
        c.note("wrong", f"{why}: {shown}")


# -- flags ---------------------------------------------------------------------------------------
_PARSER: Any = None
_INV: Any = None


def _parser() -> Any:
    global _PARSER, _INV
    if _PARSER is None:
        import nemesis.search  # noqa: F401 - imported once here, not inside the first input's deadline
        from base.inventory import load_inventory
        from harness.cli import build_parser
        _PARSER, _INV = build_parser(), load_inventory(None)
    return _PARSER


def _subparser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def commands() -> list[str]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def _bounds_error(p: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """A parsed numeric flag outside its type's bounds, or a float that is not finite."""
    for a in p._actions:
        v = getattr(args, a.dest, None)
        if isinstance(v, float) and not math.isfinite(v):
            return f"{a.dest} = {v}"
        accepts = getattr(a.type, "accepts", None)
        if accepts is not None and v is not None and v != a.default and not accepts(v):
            return f"{a.dest} = {v} outside its bounds"
    return None


def _flags_once(command: str, argv: list[str]) -> str | None:
    p = _parser()
    args = p.parse_args([command, *argv])
    if (why := _bounds_error(_subparser(command), args)) is not None:
        return why
    if command == "run":
        from unittest import mock

        import harness.commands.run as run_mod

        # resolving Kafka's jars is a download, not parsing: skipped for this call only (a process
        # that runs `harness run` after the fuzz, as a test session does, still resolves them)
        with mock.patch.object(run_mod, "fetch", lambda brokers, flag: None):
            spec = run_mod.spec_from_args(args, _INV)
        if len(spec.schedule.steps) > 3 * MAX_SCHEDULE_STEPS:
            return f"a schedule of {len(spec.schedule.steps)} steps"
        if not (math.isfinite(spec.time_limit) and spec.time_limit > 0):
            return f"time_limit {spec.time_limit}"
        if args.faults is not None and not all(f.strip() for f in args.faults.split(",")):
            return f"--faults {args.faults!r} with an empty name"
    elif command == "hunt":
        from harness.commands.hunt import judge

        faults, _, _ = judge(args)
        if not faults or not all(faults):
            return f"faults {faults}"
    return None


def surface_flags(command: str) -> Callable[[random.Random, int], Counts]:
    """The flags surface of one command: random argv of its own flags and nasty values."""

    def run(rng: random.Random, n: int) -> Counts:
        c = Counts(f"flags:{command}")
        options = [s for a in _subparser(command)._actions for s in a.option_strings if s not in ("-h", "--help")]
        positionals = [a for a in _subparser(command)._actions if not a.option_strings]
        with _in_tempdir():
            for _ in range(n):
                argv = flag_argv(rng, options, len(positionals))
                _judge(c, " ".join(argv)[:200], lambda argv=argv: _flags_once(command, argv), (UsageError,))
        return c

    return run


@contextlib.contextmanager
def _in_tempdir() -> Iterator[Path]:
    """Relative output paths the fuzz names (``--out x/y``) are proved writable in a scratch directory."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="fuzz-inputs-") as d:
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)


# -- files ---------------------------------------------------------------------------------------
def surface_schedules(rng: random.Random, n: int) -> Counts:
    from nemesis.registry import FAULTS
    from nemesis.scripted import Topology, dumps_schedule, parse_schedule
    from nemesis.targets import link_names

    _parser()
    topo = Topology.of(_INV)
    links = set(link_names(topo.brokers, topo.zookeepers))
    nodes = {*topo.brokers, *topo.zookeepers}
    c = Counts("schedules")

    def once(text: str) -> str | None:
        s = parse_schedule(text, Path("fuzz.toml"), topology=topo)
        if len(s.steps) > 2 * MAX_SCHEDULE_STEPS:
            return f"{len(s.steps)} steps"
        for st in s.steps:
            if not (math.isfinite(st.at) and 0 <= st.at <= 2 * 86_400):
                return f"at {st.at}"
            if st.op.f not in FAULTS:
                return f"fault {st.op.f!r}"
            if any(t not in nodes for t in st.op.targets):
                return f"targets {st.op.targets}"
            for k, v in st.op.params.items():
                if isinstance(v, float) and not math.isfinite(v):
                    return f"params.{k} = {v}"
            if st.op.f == "cut" and any(x not in links and "->" not in x for x in st.op.params.get("links", [])):
                return f"links {st.op.params['links']}"
        parse_schedule(dumps_schedule(s), Path("again.toml"), topology=topo)  # what hunt writes reads back
        return None

    for _ in range(n):
        text = random_schedule(rng, sorted(nodes), sorted(links))
        _judge(c, repr(text)[:200], lambda text=text: once(text), (UsageError,))
    return c


def surface_campaigns(rng: random.Random, n: int) -> Counts:
    import tomllib

    from base.tomlfile import read_toml
    from harness.campaign import CampaignError, parse_campaign

    c = Counts("campaigns")
    run_parser = _subparser("run")

    def once(path: Path) -> str | None:
        data, text = read_toml(path, "campaign file", CampaignError)
        camp = parse_campaign(data, path, text)
        plan = camp.plan()
        if len(plan) > MAX_PLAN_RUNS:
            return f"a plan of {len(plan)} runs"
        if not finite_float(0, 86_400, lo_open=True).accepts(camp.time_limit):
            return f"time_limit {camp.time_limit}"
        for planned in (plan[0], plan[-1]):  # what `harness run` will be given parses
            run_parser.parse_args(planned.argv(camp))
        return None

    with _in_tempdir() as d:
        path = d / "fuzz-campaign.toml"
        for _ in range(n):
            text = random_campaign(rng)
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            _judge(c, repr(text)[:200], lambda: once(path), (UsageError, tomllib.TOMLDecodeError))
    return c


def surface_inventories(rng: random.Random, n: int) -> Counts:
    from base.bounds import MAX_INT32, MAX_MS, MAX_NODES
    from base.inventory import load_inventory

    c = Counts("inventories")

    def once(path: Path) -> str | None:
        inv = load_inventory(path)
        if len(inv.nodes) > MAX_NODES:
            return f"{len(inv.nodes)} nodes"
        zk = inv.zookeeper
        for name, v, hi in (("tick_time_ms", zk.tick_time_ms, MAX_MS), ("sync_limit", zk.sync_limit, MAX_INT32),
                            ("session_timeout_ms", inv.agents.session_timeout_ms, MAX_MS)):
            if not 0 < v <= hi:
                return f"{name} = {v}"
        if any(b.broker_id is None or not 0 <= b.broker_id <= MAX_INT32 for b in inv.brokers):
            return "a broker id out of bounds"
        return None

    with _in_tempdir() as d:
        path = d / "fuzz-inventory.toml"
        for _ in range(n):
            text = random_inventory(rng)
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            _judge(c, repr(text)[:200], lambda: once(path), (UsageError,))
    return c


def surface_edn(rng: random.Random, n: int) -> Counts:
    c = Counts("edn")

    def once(text: str, valid: bool | None) -> str | None:
        forms = read_all(text, "fuzz.edn")
        if valid is False:
            return "a malformed text read"
        repr(forms)  # what a caller prints
        return None

    for _ in range(n):
        text, valid = edn_text(rng)
        _judge(c, repr(text)[:200], lambda text=text, valid=valid: once(text, valid), (EdnError,))
    return c


SURFACES: dict[str, Callable[[random.Random, int], Counts]] = {
    **{f"flags:{cmd}": surface_flags(cmd) for cmd in (
        "run", "hunt", "campaign", "doctor", "setup", "check", "check-server", "serve", "repro", "report",
        "analyze", "teardown", "agent")},
    "schedules": surface_schedules,
    "campaigns": surface_campaigns,
    "inventories": surface_inventories,
    "edn": surface_edn,
}


def run_named(name: str, rng: random.Random, n: int, scratch: Any = None) -> Any:
    """One surface of ``SURFACES`` as bench/fuzz.py's table counts it (its ``Tally``)."""
    from fuzzlib import Tally

    c = SURFACES[name](rng, n)
    tally = Tally()
    tally.counts.update(accepted=c.accepted, refused=c.refusals, crash=c.crashes, hang=c.hangs, wrong=c.wrong)
    tally.examples = [f"{kind}: {what}" for kind, what in c.examples.items()][:5]
    return tally


def table(rows: list[Counts]) -> str:
    head = ("surface", "inputs", "clean refusals", "crashes", "hangs", "wrong acceptances")
    data = [(r.surface, r.inputs, r.refusals, r.crashes, r.hangs, r.wrong) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *data, strict=False)]
    line = lambda row: "  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w)  # noqa: E731
                                 for i, (x, w) in enumerate(zip(row, widths, strict=True)))
    return "\n".join([line(head), *(line(r) for r in data)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="inputs per surface (default 10000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma list of surfaces (default all)")
    args = ap.parse_args(argv)
    names = [s for s in args.only.split(",") if s] or list(SURFACES)
    if unknown := [s for s in names if s not in SURFACES]:
        print(f"--only: unknown surfaces {unknown} (known: {', '.join(SURFACES)})", file=sys.stderr)
        return 254
    rows = []
    for name in names:
        t0 = time.monotonic()
        rows.append(SURFACES[name](random.Random(f"{args.seed}:{name}"), args.n))
        print(f"{name}: {time.monotonic() - t0:.1f}s", file=sys.stderr)
    print(table(rows))
    for r in rows:
        for kind, what in r.examples.items():
            print(f"  {r.surface} {kind}: {what}")
    return 1 if any(r.crashes or r.hangs or r.wrong for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
