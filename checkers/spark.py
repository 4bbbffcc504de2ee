"""The one SparkSession factory every checker uses.

``get_spark()`` returns a process-wide session (created once, reused). The master is, in order:
the ``master`` argument (the ``--spark-master`` flag), env ``HARNESS_SPARK_MASTER``, ``local[*]``.
Commands check it before any work (``master_arg`` for the flag, ``check_master``): a malformed URL
is bad input naming the flag or the variable, a standalone master nothing answers at is an
environment failure in seconds, not a traceback after a run and Spark's minute of retries; so is
one where something else answers (a web UI's port, an SSH daemon: ``checkers.rpc_probe``).
A master that is not ``local[...]`` gets the project's packages shipped to its executors
(``checkers.ship``); every session gets the project's JVM functions (``checkers.udfs``).
``start_spark_in_background()`` warms it on a worker thread so a run can pay the JVM start-up
while the cluster is still running.

The driver JVM's temporary files (``java.io.tmpdir``; a local session's ``spark.local.dir`` too:
its shuffle and broadcast blocks) go to one directory per process, ``zkfence-spark-<pid>-<start>-…``
under the system's temp dir, which the JVM deletes as it exits. A JVM killed outright (SIGKILL, the
OOM killer) deletes nothing: the next session and ``harness teardown`` remove those of processes
that are gone, where Spark's own ``blockmgr-*`` and ``spark-*`` directories stayed in /tmp for good.

``quick=True`` (a run, or ``harness check`` on run-sized input) starts a local session's JVM for
latency, not throughput (``QUICK_JVM``, ``QUICK_CONF``): on a run's history the JVM spends most of its CPU
compiling its own code (JIT) and the plans' (codegen), not on the few thousand rows. The large
inputs of the benches and ``harness analyze`` get a local JVM for throughput (``BATCH_JVM``). A large
input checked on a quick session (a check server's) has the plans' code generated all the same
(``generated_code``).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from base.errors import EnvironmentFailed, UsageError
from base.localstate import orphaned, owner_prefix, process_start_time
from checkers import rpc_probe

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MASTER = "local[*]"
ENV_MASTER = "HARNESS_SPARK_MASTER"
LOCAL_SHUFFLE_PARTITIONS = 4
# C1 only (no C2 recompiles of warm methods) and the serial collector (no GC threads competing for
# the cores): on a stored run's check (118 events), JVM CPU for session start + check went from
# 28 + 83 s to 17 + 50 s on a loaded 2-core machine (bench/check_latency.py measures the wall).
# C1 alone gets a 48 MB code cache by default; a check server's session filled it (the JVM then
# stops compiling and runs everything interpreted), hence the larger one.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"
# And no Janino compilation of projections, orderings and predicates: interpreted, they evaluate a
# run's rows in less time than compiling them takes (with QUICK_JVM, check CPU 45 -> 36 s, same load).
QUICK_CONF = {"spark.sql.codegen.factoryMode": "NO_CODEGEN", "spark.sql.codegen.wholeStage": "false"}
# The throughput collector, not G1: a batch over millions of rows wants the least total GC work and
# can take its pauses. bench/checkers_epoch.py at 10M events: 33.0 s with G1, 27.5 s with this
# (bench/RESULTS.md).
BATCH_JVM = "-XX:+UseParallelGC"
# Compiled classes a session keeps (Spark's default: 100). One run of the fencing plans generates
# about 160, so each run evicted the last one's and compiled all of them again, with Janino and then
# the JIT: 159 Janino compiles per repeated run at 10M events; kept, 2-16, and the run 20.2-21.2 s
# -> 15.5-17.7 s (a static setting: it must be given when the session starts).
CODEGEN_CACHE_ENTRIES = 1000

SCRATCH_PREFIX = "zkfence-spark-"

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_scratch: Path | None = None
_jvm_deletes_scratch = False  # its JVM has it on Spark's list of directories deleted at shutdown

# The master URLs Spark's SparkContext.createTaskScheduler takes (SparkMasterRegex), plus yarn and
# k8s:// (cluster managers of their own): anything else fails inside the JVM with no word of why.
_HOST_PORT = r"(?:\[[0-9A-Fa-f:.]+\]|[^\s,/:\[\]]+):([0-9]{1,5})"
_MASTER = re.compile(
    r"local|local\[(?:\*|[1-9][0-9]*)(?:\s*,\s*[1-9][0-9]*)?\]"
    r"|local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]"
    rf"|spark://{_HOST_PORT}(?:,{_HOST_PORT})*|yarn|k8s://\S+"
)
MASTER_FORMS = "local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT[,HOST:PORT...], " \
    "yarn or k8s://URL"
PROBE_TIMEOUT_S = 3.0


def master_problem(url: str) -> str | None:
    """Why ``url`` is not a master URL Spark takes, or None."""
    ok = _MASTER.fullmatch(url) is not None and all(0 < port <= 65535 for _, port in standalone_endpoints(url))
    return None if ok else f"{url!r} is not a Spark master URL ({MASTER_FORMS})"


def add_master_flag(p: argparse.ArgumentParser, what: str = "Spark master") -> None:
    p.add_argument("--spark-master", metavar="URL", type=master_arg,
                   help=f"{what} (default ${ENV_MASTER} or {DEFAULT_MASTER})")


def master_arg(text: str) -> str:
    """``--spark-master``'s argparse type: a malformed URL is the flag's error (exit 254)."""
    problem = master_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def standalone_endpoints(url: str) -> list[tuple[str, int]]:
    """A ``spark://`` master's (host, port) pairs, in order (several for standby masters); none otherwise."""
    if not url.startswith("spark://"):
        return []
    pairs = []
    for hp in url.removeprefix("spark://").split(","):
        host, _, port = hp.rpartition(":")
        pairs.append((host.strip("[]"), int(port) if port.isdigit() else -1))
    return pairs


def resolve_master(master: str | None = None) -> str:
    if master:
        return master
    env = os.environ.get(ENV_MASTER)
    if env:
        problem = master_problem(env)
        if problem is not None:
            raise UsageError(f"${ENV_MASTER}: {problem}")
        return env
    return DEFAULT_MASTER


def check_master(master: str | None = None) -> str:
    """The master a session would use, checked before any work: a malformed one from the environment
    is ``UsageError``; a standalone master none of whose HOST:PORTs takes a connection and answers
    like Spark's RPC (``checkers.rpc_probe``) is ``EnvironmentFailed`` now (Spark itself retries for a
    minute, then fails with a Java trace that names neither the port nor what answered there). One
    that takes the connection and sends nothing back is left to Spark, with a warning on stderr: that
    minute of retries is then the likely wait (a master with authentication on closes such a
    connection too, so silence is no verdict)."""
    m = resolve_master(master)
    refused, strangers, silent = [], [], []
    for host, port in standalone_endpoints(m):
        try:
            answer, reply = rpc_probe.probe(host, port, PROBE_TIMEOUT_S)
        except OSError as e:
            refused.append(f"{host}:{port} ({e.strerror or e})")
            continue
        if answer is rpc_probe.Answer.OTHER:
            strangers.append(f"{host}:{port} answers {rpc_probe.shown(reply)!r}, not Spark's RPC")
        elif reply:
            return m  # a Spark frame, or a TLS record
        else:
            silent.append(f"{host}:{port}")
    why = ([f"nothing accepts connections at {', '.join(refused)}"] if refused else []) + strangers
    if silent:
        print(f"harness: Spark master {m}: {', '.join(silent)} sent nothing back to a Spark RPC request within "
              f"{PROBE_TIMEOUT_S:g} s{''.join('; ' + w for w in why)}; if it is not a Spark master, Spark gives up "
              "registering only after a minute", file=sys.stderr)
    elif why:
        raise EnvironmentFailed(f"Spark master {m}: {'; '.join(why)}")
    return m


def get_spark(master: str | None = None, *, quick: bool = False) -> SparkSession:
    """Return the shared SparkSession, creating it on first use.

    A second call with a different master returns the already running session (Spark allows
    one active context per process); callers that care can compare ``spark.sparkContext.master``.
    ``quick`` applies to a local session this call creates: its JVM gets ``QUICK_JVM``, its SQL
    settings ``QUICK_CONF``; without it, a local session's JVM gets ``BATCH_JVM``.
    """
    with _lock:
        from pyspark.sql import SparkSession

        from checkers import cds, spark_defaults, udfs

        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        m = resolve_master(master)
        problem = master_problem(m)
        if problem is not None:
            raise UsageError(problem)
        local = m.startswith("local")
        os.environ.setdefault("PYSPARK_PYTHON", _python())
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        _export_pythonpath()
        scratch = _jvm_scratch()
        theirs = spark_defaults.user_properties()  # the user's driver settings, which ours add to or yield to
        builder = (
            SparkSession.builder.master(m)
            .appName("zkfence-harness-check")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.adaptive.enabled", "true")
            .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
            .config("spark.python.worker.reuse", "true")
            # PySpark 4 otherwise records the Python call site of every DataFrame/Column call, with
            # several JVM round trips each: a third of the time to build the fencing checkers' plan.
            # Errors then lose the "== DataFrame ==" call-site section, nothing else.
            .config("spark.python.sql.dataFrameDebugging.enabled", "false")
            # Past 32 paths Spark lists its input in a job of its own: harness analyze reading 1,000
            # runs' histories spent 3.9-7.5 s there, and 0.4 s listing them in the driver.
            .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
            # The driver runs here whatever the master: it maps the class-data-sharing archive.
            # These come after the user's options, which a setting of the session's would replace:
            # the last of a repeated option wins, so these hold where the two meet.
            .config("spark.driver.extraJavaOptions", spark_defaults.added(
                "spark.driver.extraJavaOptions", f'{_log_opts()} {cds.jvm_options()} "-Djava.io.tmpdir={scratch}"'
                + (f" {QUICK_JVM if quick else BATCH_JVM}" if local else ""), " ", theirs))
        )
        jar = udfs.jar()
        if jar is not None:  # the driver's classes, and fetched by a cluster's executors
            # added to the user's jars (a listener or a plugin they name keeps its jar)
            builder = builder.config("spark.jars", spark_defaults.added("spark.jars", str(jar), ",", theirs))
        if local:  # a cluster's executors keep their blocks where their worker says
            builder = (
                builder.config("spark.local.dir", str(scratch))
                .config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
                .config("spark.default.parallelism", str(max(2, os.cpu_count() or 2)))
                .config("spark.driver.memory", os.environ.get("HARNESS_SPARK_DRIVER_MEMORY")
                        or theirs.get("spark.driver.memory") or "4g")
            )
        if quick and local:
            for k, v in QUICK_CONF.items():
                builder = builder.config(k, v)
        try:
            spark = builder.getOrCreate()
        except Exception as e:  # a cluster that refuses us, or a setting the JVM rejects (local too)
            files = [str(f) for f in spark_defaults.defaults_files() if f.is_file()]
            read = f"; the driver read {' and '.join(files)}" if files else ""
            raise EnvironmentFailed(f"Spark master {m}: no session ({_why(e)}){read}") from e
        spark.sparkContext.setLogLevel("ERROR")
        jvm = spark.sparkContext._jvm
        jvm.org.apache.spark.util.ShutdownHookManager.registerShutdownDeleteDir(jvm.java.io.File(str(scratch)))
        global _jvm_deletes_scratch
        _jvm_deletes_scratch = True
        if jar is not None:
            udfs.register(spark)
        if not local:
            for resolved in _jars_the_session_dropped(spark):
                spark.sparkContext._jsc.sc().addJar(resolved)
        from checkers.ship import ship

        ship(spark)
        return spark


def _jars_the_session_dropped(spark: SparkSession) -> list[str]:
    """The jars spark-submit gave the driver that the session's ``spark.jars`` lacks: those of
    ``--packages`` or ``spark.jars.packages``, which spark-submit resolves and merges into the
    ``spark.jars`` it starts the JVM with, a setting the session's own then replaces. The driver has
    them on its classpath; a cluster's executors fetch only what the session lists or adds."""
    from urllib.parse import urlparse

    launched = spark.sparkContext._jvm.java.lang.System.getProperty("spark.jars") or ""
    listed = {Path(urlparse(j).path).name for j in (spark.sparkContext.getConf().get("spark.jars") or "").split(",")}
    return [j for j in launched.split(",") if j and Path(urlparse(j).path).name not in listed]


@contextlib.contextmanager
def session_conf(spark: SparkSession, conf: Mapping[str, str | None]) -> Iterator[None]:
    """The session's SQL settings ``conf`` for the block (``None``: unset, Spark's default), then
    restored. Blocks may overlap on threads (a check's lanes, a warm-up a check overtook): each key's
    value is that of the latest block still holding it, and the value before the first comes back
    when the last ends. Saving and restoring per block instead, two overlapping blocks could leave
    the session with the first one's settings for good."""
    session = getattr(getattr(spark, "_jsparkSession", None), "_target_id", None) or id(spark)
    hold = object()
    with _conf_lock:
        for k, v in conf.items():
            held = _conf_holds.setdefault((session, k), _Held(spark.conf.get(k, None)))
            held.holds.append((hold, v))
            _set_conf(spark, k, v)
    try:
        yield
    finally:
        with _conf_lock:
            for k in conf:
                held = _conf_holds[(session, k)]
                before = held.value()
                held.holds = [(h, v) for h, v in held.holds if h is not hold]
                if not held.holds:
                    del _conf_holds[(session, k)]
                if held.value() != before:
                    _set_conf(spark, k, held.value())


@dataclass
class _Held:
    """One session setting some ``session_conf`` blocks hold: its value before them, then theirs."""

    original: str | None
    holds: list[tuple[object, str | None]] = field(default_factory=list)

    def value(self) -> str | None:
        return self.holds[-1][1] if self.holds else self.original


_conf_lock = threading.Lock()
_conf_holds: dict[tuple[object, str], _Held] = {}


def _set_conf(spark: SparkSession, key: str, value: str | None) -> None:
    if value is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, value)


def generated_code(spark: SparkSession, *, large: bool) -> contextlib.AbstractContextManager[None]:
    """Spark's own code generation for the block when the input is ``large`` and the session is
    quick (``QUICK_CONF``, which interprets instead): a check server's session takes every check,
    and interpreted expressions over hundreds of thousands of events cost more than compiling them
    (a 300,000-event history on a quick session: 68.0 / 65.5 s interpreted, 58.0 / 55.5 s
    generated, alternated in one process)."""
    quick = all(spark.conf.get(k, None) == v for k, v in QUICK_CONF.items())
    return session_conf(spark, dict.fromkeys(QUICK_CONF)) if large and quick else contextlib.nullcontext()


def start_spark_in_background(master: str | None = None, *, quick: bool = False,
                              then: Callable[[SparkSession], object] | None = None) -> Future[SparkSession]:
    """Start (or reuse) the session on a background thread; ``.result()`` waits for it.

    ``then(spark)`` runs next on that thread, before the future resolves: a run passes
    ``checkers.project.warm_up``, so the JVM has compiled the checkers' code paths when the run's own
    history arrives. It is only a head start: an exception from it is dropped (the real check runs
    the same code and reports)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spark-warm")
        ex = _executor
    return ex.submit(_start, master, quick, then)


def _start(master: str | None, quick: bool, then: Callable[[SparkSession], object] | None) -> SparkSession:
    spark = get_spark(master, quick=quick)
    if then is not None:
        try:
            then(spark)
        except Exception:  # noqa: BLE001, S110 - a head start only, see start_spark_in_background
            pass
    return spark


def stop_spark() -> None:
    from pyspark.sql import SparkSession

    with _lock:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()


def _jvm_scratch() -> Path:
    """This process's directory for the driver JVM's temporary files (one JVM per process, so one
    directory), made on first use after removing those of processes that are gone."""
    global _scratch
    if _scratch is None:
        for d in orphaned(Path(tempfile.gettempdir()), SCRATCH_PREFIX):
            shutil.rmtree(d, ignore_errors=True)
        _scratch = Path(tempfile.mkdtemp(prefix=owner_prefix(SCRATCH_PREFIX)))
        atexit.register(_remove_scratch_unless_the_jvm_will, _scratch)
    return _scratch


def _remove_scratch_unless_the_jvm_will(scratch: Path) -> None:
    """At exit: a running JVM that has the directory on its list deletes it as it exits (it outlives
    this process by a moment); one that was killed, or whose session never started, does not."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)  # not proc.poll(): another thread may wait on it
    if not _jvm_deletes_scratch or proc is None or process_start_time(proc.pid) is None:
        shutil.rmtree(scratch, ignore_errors=True)


def _why(e: BaseException) -> str:
    """A failed session's reason in one line: the Java exception's first line, not py4j's wrapper,
    and its root cause's when it has one (Spark logs the cause, e.g. "All masters are unresponsive",
    as ERROR lines just before; a listener Spark cannot load is only in the cause)."""
    def first_line(text: str) -> str:
        lines = text.strip().splitlines()
        return lines[0] if lines else type(e).__name__

    java = getattr(e, "java_exception", None)
    if java is None:
        return first_line(str(e))
    try:
        why, root = first_line(str(java.toString())), java
        while root.getCause() is not None and not root.getCause().equals(root):
            root = root.getCause()
        return why if root.equals(java) else f"{why}; caused by {first_line(str(root.toString()))}"
    except Exception:  # the JVM is gone: py4j's own text
        return first_line(str(e))


def _export_pythonpath() -> None:
    """Python workers inherit PYTHONPATH: make sure they can import this project's packages."""
    root = str(Path(__file__).resolve().parent.parent)
    cur = os.environ.get("PYTHONPATH", "")
    if root not in cur.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (root, cur) if x)


def _log_opts() -> str:
    conf = Path(__file__).with_name("log4j2.properties")
    return f"-Dlog4j.configurationFile=file:{conf} -Dlog4j2.configurationFile=file:{conf}"


def _python() -> str:
    import sys

    return sys.executable


_GLOB = re.compile(r"([\[\]{}*?\\])")


def literal_paths(paths: Iterable[str]) -> list[str]:
    """``paths`` for Spark's readers, which take every path as a Hadoop glob: a store under
    ``runs [2]/`` or ``a{b}`` must be read as it is named."""
    return [_GLOB.sub(r"\\\1", str(p)) for p in paths]


def source_files(df: DataFrame) -> dict[str, str]:
    """The files a file-based DataFrame reads, ``{URI: path}``: each URI as ``input_file_name()``
    gives it for the file's rows (both are Hadoop's ``Path.toUri`` of the same listing), each path
    percent-decoded by the rules of a URI's path. Joining rows on the URI decodes nothing per row;
    and ``url_decode`` would read a ``+`` in a path as a space."""
    from urllib.parse import unquote, urlsplit

    return {uri: unquote(urlsplit(uri).path) for uri in df.inputFiles()}
