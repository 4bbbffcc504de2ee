"""A real Apache Kafka broker in ZooKeeper mode as a component (issue 12, scope 1).

The server jars come from Maven Central through Maven itself: ``org.apache.kafka:kafka_2.13:VERSION``
(``kafka_2.12`` before 2.4) and its runtime dependencies, plus the slf4j/reload4j logging binding
Kafka's own distribution ships, copied once into ``.local/kafka/VERSION/libs`` on the control node
(``fetch_kafka``). A ``KafkaBroker`` uploads them to its node's workdir, writes ``server.properties``
(broker.id, a PLAINTEXT listener on the node's address and a port chosen at run time, a CLIENT
listener advertised as the workload clients' Toxiproxy link when the run has one, log dirs in the
workdir, the given ``zookeeper.connect``, the session timeout) and runs ``kafka.Kafka`` with a
small heap, detached, through the node's ``Remote`` like every other ``RemoteProcess``.

Versions without ZooKeeper mode (4.0 and later) and versions Maven cannot resolve are bad input
(``UsageError``: one line, exit 254 from ``python -m base.components.kafka``).

Kafka 2.0-2.3 bring a ZooKeeper 3.4 client (3.4.13, 3.4.14), and on Java 14 and later it reaches no
server: its ``StaticHostProvider.getHostString`` takes the host from ``InetSocketAddress.toString()``,
which JDK 14 changed to ``host/<unresolved>:port`` for an unresolved address, so every address
becomes ``127.0.0.1/<unresolved>`` and the connect fails (``UnresolvedAddressException``; ZooKeeper
3.4 reached end of life with it unfixed). Java 17 is the only JRE this project's Debian offers, so
``fetch_kafka`` replaces such a client: when the resolved jars hold ``zookeeper-3.4.*.jar`` it
resolves again with ``ZK_CLIENT`` (the last 3.5 release) as a direct dependency, which Maven's
nearest-wins rule puts in place of the 3.4 jar and its 3.4-only dependencies (netty 3, jline, log4j
and its slf4j binding). The 3.5 client takes the host with ``getHostString()`` and keeps 3.4's client
API: every ZooKeeper class, method and field that the jars of Kafka 2.0.1, 2.1.1, 2.2.2 and 2.3.1
(kafka and kafka-clients) and zkclient 0.11 reference exists in 3.5.10 with the same signature (read
from their class files' constant pools). A broker then runs a newer client than its release shipped
with: the client's own behaviour (reconnects, session handling) is 3.5's, Kafka's is the release's.
The replacement is written in the cache's ``.complete`` file; a cache holding a 3.4 client (fetched
before) is fetched again.

A broker process that exits before it has started fails the wait at once: the JVM runs under a
small shell that writes its exit status next to the log (``exit_code()``), and ``wait_started``
polls the process with the log in one remote command, so the error names the exit code and the
log's last lines instead of waiting out the timeout.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from base.components.process import EXIT_LOG_LINES, RemoteProcess
from base.errors import EXIT_BAD_INPUT, UsageError
from base.localstate import KAFKA_LOGS_PREFIX, owned_tempdir, taking_turns
from base.remote import Remote, RemoteError
from base.wait import wait_until
from history import Event

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKA_CACHE = REPO_ROOT / ".local" / "kafka"
MAIN_CLASS = "kafka.Kafka"
# the logging binding of Kafka's binary distribution (libs/slf4j-reload4j, libs/reload4j); the
# slf4j 1.7 binding works with every slf4j-api 1.7.x that Kafka 2.x-3.9 brings
LOGGING_DEPS = (("org.slf4j", "slf4j-reload4j", "1.7.36"), ("ch.qos.reload4j", "reload4j", "1.2.25"))
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
# the ZooKeeper client that replaces a 3.4 one (module docstring): 3.5.10, the last 3.5 release,
# whose runtime dependencies are slf4j-api, audience-annotations, zookeeper-jute and Netty 4 (no
# log4j of its own next to reload4j; Netty is what --zk-socket netty needs, which 3.4 lacked)
ZK_CLIENT = ("org.apache.zookeeper", "zookeeper", "3.5.10")
_ZK_JAR = re.compile(r"^zookeeper-(\d+)\.(\d+)\.(\d+)\.jar$")
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d{yyyy-MM-dd HH:mm:ss,SSSZ}] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=INFO
log4j.logger.kafka.controller=INFO
log4j.logger.state.change.logger=INFO
"""


def release_of(target: str) -> str | None:
    """The VERSION of ``kafka:VERSION`` (how flags and campaign files name a release), else None."""
    kind, _, version = target.partition(":")
    return version if kind == "kafka" and version else None


def parse_version(version: str) -> tuple[int, int, int]:
    """``X.Y.Z`` of a Kafka release that has ZooKeeper mode (2.x-3.9.x); else a ``UsageError``."""
    m = _VERSION.match(version.strip())
    if m is None:
        raise UsageError(f"Kafka version {version!r}: expected MAJOR.MINOR.PATCH, e.g. 3.9.1")
    v = (int(m[1]), int(m[2]), int(m[3]))
    if v >= (4, 0, 0):
        raise UsageError(f"Kafka {version}: 4.0 and later have no ZooKeeper mode (KRaft only); use 2.x-3.9.x")
    if v < (2, 0, 0):
        raise UsageError(f"Kafka {version}: versions before 2.0 are not supported; use 2.x-3.9.x")
    return v


def kafka_artifact(version: str) -> str:
    """The Maven coordinates of the broker (Scala 2.13 builds exist from 2.4 on)."""
    scala = "2.13" if parse_version(version) >= (2, 4, 0) else "2.12"
    return f"org.apache.kafka:kafka_{scala}:{version}"


def bundled_zookeeper(jars: Iterable[str]) -> str | None:
    """The version of the ZooKeeper client among these jar names (``zookeeper-X.Y.Z.jar``), if any."""
    for name in jars:
        m = _ZK_JAR.match(name)
        if m is not None:
            return f"{m[1]}.{m[2]}.{m[3]}"
    return None


def zookeeper_replacement(bundled: str | None) -> str | None:
    """The ZooKeeper client version that replaces ``bundled``: ``ZK_CLIENT``'s for a 3.4 client (it
    cannot connect on Java 14+), None for any other (3.5 and later take the host right)."""
    if bundled is not None and bundled.split(".")[:2] == ["3", "4"]:
        return ZK_CLIENT[2]
    return None


def _pom(version: str, zookeeper: str | None = None) -> str:
    """The pom whose runtime dependencies are Kafka VERSION's server jars; with ``zookeeper``, that
    ZooKeeper client as a direct dependency (nearer than Kafka's own, so Maven takes it instead)."""
    group, artifact, _ = kafka_artifact(version).split(":")
    zk = [(ZK_CLIENT[0], ZK_CLIENT[1], zookeeper)] if zookeeper else []
    deps = [(group, artifact, version), *zk, *LOGGING_DEPS]
    body = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
                   "</dependency>" for g, a, v in deps)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f"<groupId>zkfence</groupId><artifactId>kafka-{version}</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>\n")


def _maven_error(output: str) -> str:
    """What went wrong, in one line, from Maven's output (its first ``[ERROR]`` line)."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", raw).strip() for raw in output.splitlines()]
    for line in lines:
        if line.startswith("[ERROR] ") and line[8:].strip():
            msg = line[8:].split(" -> [Help")[0]
            msg = re.sub(r"^Failed to execute goal on project [^:]*: ", "", msg)
            msg = re.sub(r"^Could not resolve dependencies for project [^:]*:[^:]*:[^:]*:[^:]*: ", "", msg)
            msg = re.sub(r" during a previous attempt\..*$", "", msg)
            return msg[:300]
    rest = [line for line in lines if line]
    return rest[-1][:300] if rest else "no output"


def fetch_kafka(version: str, cache: Path = KAFKA_CACHE, mvn: str = "mvn", timeout: float = 900.0) -> Path:
    """The directory of Kafka VERSION's server jars, resolved with Maven on first use and cached
    (``cache/VERSION/libs``, complete when ``cache/VERSION/.complete`` exists). Concurrent first uses
    (the suite's two workers) take turns on a lock file beside the cache: the second finds the
    first's. Both resolving, the second replaced the first's ``libs`` while a broker was being
    installed from it (CI: lz4-java's jar gone mid-copy)."""
    parse_version(version)
    home = cache / version
    libs = home / "libs"
    if _cached(home, libs):
        return libs
    if shutil.which(mvn) is None:
        raise UsageError(f"Kafka {version}: Maven ({mvn}) is not installed; `make install` installs it")
    with taking_turns(cache / f".{version}.lock"):
        if _cached(home, libs):
            return libs
        home.mkdir(parents=True, exist_ok=True)
        try:
            return _resolve(version, home, libs, mvn, timeout)
        except BaseException:
            if not (home / ".complete").exists():
                shutil.rmtree(home, ignore_errors=True)  # nothing half-fetched stays in the cache
            raise


def _cached(home: Path, libs: Path) -> bool:
    """A complete cache whose ZooKeeper client needs no replacement (one fetched before the
    replacement existed holds a 3.4 client, and is fetched again)."""
    names = [p.name for p in libs.glob("*.jar")] if libs.is_dir() else []
    return ((home / ".complete").exists() and any(n.startswith("kafka_") for n in names)
            and zookeeper_replacement(bundled_zookeeper(names)) is None)


def _resolve(version: str, home: Path, libs: Path, mvn: str, timeout: float) -> Path:
    with tempfile.TemporaryDirectory(dir=home, prefix="fetch-") as tmp:
        out = _copy_dependencies(version, None, Path(tmp) / "libs", mvn, timeout)
        bundled = bundled_zookeeper(p.name for p in out.glob("*.jar"))
        replacement = zookeeper_replacement(bundled)
        note = ""
        if replacement is not None:
            out = _copy_dependencies(version, replacement, Path(tmp) / "libs-zk", mvn, timeout)
            got = bundled_zookeeper(p.name for p in out.glob("*.jar"))
            if got != replacement or len(list(out.glob("zookeeper-3*.jar"))) != 1:
                raise UsageError(f"Kafka {version}: its ZooKeeper client {bundled} was not replaced by "
                                 f"{replacement} (got {got})")
            note = f"zookeeper client {bundled} replaced by {replacement}: 3.4 cannot connect on Java 14+\n"
        shutil.rmtree(libs, ignore_errors=True)
        out.rename(libs)
    (home / ".complete").write_text(kafka_artifact(version) + "\n" + note)
    return libs


def _copy_dependencies(version: str, zookeeper: str | None, out: Path, mvn: str, timeout: float) -> Path:
    """Maven's ``dependency:copy-dependencies`` of ``_pom(version, zookeeper)`` into ``out``."""
    pom = out.parent / f"pom-{out.name}.xml"
    pom.write_text(_pom(version, zookeeper))
    try:
        p = subprocess.run([mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(pom), "dependency:copy-dependencies",
                            "-DincludeScope=runtime", f"-DoutputDirectory={out}"],
                           capture_output=True, text=True, timeout=timeout, cwd=out.parent)
    except subprocess.TimeoutExpired:
        raise UsageError(f"Kafka {version}: Maven did not finish within {timeout:.0f}s") from None
    if p.returncode != 0 or not any(out.glob("kafka_*.jar")):
        raise UsageError(f"Kafka {version}: Maven could not resolve {kafka_artifact(version)}: "
                         f"{_maven_error(p.stdout + p.stderr)}")
    return out


@dataclass(slots=True)
class KafkaSettings:
    version: str
    zookeeper_connect: str  # host:port,...[/chroot]: through Toxiproxy and the wire proxy in a run
    session_timeout_ms: int = 3000  # the inventory's session timeout
    heap_mb: int = 256
    java: str = "java"
    extra: dict[str, str] = field(default_factory=dict)  # more server.properties
    # JVM system properties (-Dk=v): the ZooKeeper client reads ``zookeeper.clientCnxnSocket`` from
    # here; Kafka applies its same-named broker property only with zookeeper.ssl.client.enable=true
    system_props: dict[str, str] = field(default_factory=dict)
    # A second listener for the workload clients: (port on the node's address, the host:port it is
    # advertised as: the client's Toxiproxy link). Brokers replicate over PLAINTEXT; clients bootstrap
    # from the advertised addresses and, since a broker answers Metadata with the addresses of the
    # listener the request came in on, every connection they make goes through their links.
    client_listener: tuple[int, str] | None = None
    # broker id -> the host:port its PLAINTEXT (inter-broker) listener is advertised as: a Kafka wire
    # proxy's listener (docs/kafkaproxy.md). The broker still listens on its own port; the controller
    # and the other brokers' replica fetchers, which connect to advertised addresses, pass the proxy.
    advertised_plaintext: dict[int, str] = field(default_factory=dict)


def render_server_properties(broker_id: int, address: str, port: int, data_dir: str, s: KafkaSettings) -> str:
    listeners = f"PLAINTEXT://{address}:{port}"
    advertised = f"PLAINTEXT://{s.advertised_plaintext.get(broker_id, f'{address}:{port}')}"
    names = {}
    if s.client_listener is not None:
        client_port, client_advertised = s.client_listener
        listeners += f",CLIENT://{address}:{client_port}"
        advertised += f",CLIENT://{client_advertised}"
        names = {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT",
                 "inter.broker.listener.name": "PLAINTEXT"}
    props = {
        "broker.id": str(broker_id),
        "listeners": listeners,
        "advertised.listeners": advertised,
        **names,
        "log.dirs": data_dir,
        "zookeeper.connect": s.zookeeper_connect,
        "zookeeper.session.timeout.ms": str(s.session_timeout_ms),
        "zookeeper.connection.timeout.ms": str(max(s.session_timeout_ms, 6000)),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        **s.extra,
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


class KafkaBroker(RemoteProcess):
    """One real Kafka broker (ZooKeeper mode) on a node (a Component)."""

    role = "kafka"

    def __init__(self, name: str, broker_id: int, address: str, port: int, remote: Remote, workdir: str,
                 settings: KafkaSettings, peek_dir: Path | None = None, run: str = "",
                 on_start: Callable[[KafkaBroker], None] = lambda broker: None) -> None:
        """``peek_dir``: where ``events()`` downloads the log; ``on_start`` records the pid file for
        `harness teardown` before the process exists."""
        super().__init__(name, remote, workdir, f"{workdir}/kafka.pid", f"{workdir}/kafka.log")
        parse_version(settings.version)
        self.broker_id = broker_id
        self.address = address
        self.port = port
        self.settings = settings
        self.peek_dir = peek_dir
        self.run = run
        self.on_start = on_start

    @property
    def libs_dir(self) -> str:
        return f"{self.workdir}/libs"

    @property
    def data_dir(self) -> str:
        return f"{self.workdir}/data"

    @property
    def bootstrap(self) -> str:
        return f"{self.address}:{self.port}"

    def install(self, libs: Path) -> None:
        """Upload the jars (``fetch_kafka``) the node does not already have, and the config files."""
        have = set(self.remote.run(f"mkdir -p {shlex.quote(self.libs_dir)} && ls {shlex.quote(self.libs_dir)}",
                                   check=True).stdout.split())
        for jar in sorted(libs.glob("*.jar")):
            if jar.name not in have:
                self.remote.put(jar, f"{self.libs_dir}/{jar.name}")
        self.configure()

    def configure(self) -> None:
        props = render_server_properties(self.broker_id, self.address, self.port, self.data_dir, self.settings)
        wd = shlex.quote(self.workdir)
        self.remote.run(f"mkdir -p {wd} {shlex.quote(self.data_dir)} && "
                        f"printf %s {shlex.quote(props)} > {wd}/server.properties && "
                        f"printf %s {shlex.quote(LOG4J_PROPERTIES)} > {wd}/log4j.properties", check=True)

    @property
    def exit_file(self) -> str:
        return f"{self.workdir}/kafka.exit"

    def command(self) -> tuple[str, dict[str, str] | None]:
        s, wd = self.settings, self.workdir
        props = "".join(f"{shlex.quote(f'-D{k}={v}')} " for k, v in s.system_props.items())
        java = (f"{shlex.quote(s.java)} -Xmx{s.heap_mb}m -Xms{s.heap_mb}m -XX:+UseSerialGC "
                f"-XX:TieredStopAtLevel=1 -Djava.awt.headless=true -Duser.timezone=UTC {props}"
                f"-Dlog4j.configuration=file:{shlex.quote(wd + '/log4j.properties')} "
                f"-cp {shlex.quote(self.libs_dir + '/*')} {MAIN_CLASS} {shlex.quote(wd + '/server.properties')}")
        return recording_exit(java, self.exit_file), None

    @property
    def label(self) -> str:
        return f"Kafka {self.settings.version}"

    def exit_code(self) -> int | None:
        """The exit status of this start's JVM once it has exited by itself; None while it runs, or
        when it was killed by a signal to its group (a nemesis's kill, a stop that SIGKILLed it)."""
        text = self.remote.run(f"cat {shlex.quote(self.exit_file)} 2>/dev/null", timeout=10).stdout.strip()
        return int(text) if text.isdigit() else None

    def how_it_ended(self) -> str:
        code = self.exit_code()
        return f"exited with code {code}" if code is not None else "was killed by a signal (no exit code)"

    @property
    def previous_log(self) -> str:
        return f"{self.workdir}/kafka-previous.log"

    def start(self) -> None:
        """Start the broker; the log of a previous start (before a kill or bounce) is kept."""
        lf = shlex.quote(self.logfile)
        self.remote.run(f"rm -f {shlex.quote(self.exit_file)}; "
                        f"if test -s {lf}; then cat {lf} >> {shlex.quote(self.previous_log)}; fi", timeout=60)
        self.on_start(self)
        super().start()

    def logs(self, dest: Path) -> list[Path]:
        """This start's log and, after a restart, the earlier ones (``NAME-kafka-previous.log``)."""
        prev = None
        # only after a restart: downloading a file that does not exist leaves an empty one behind
        if self.remote.run(f"test -s {shlex.quote(self.previous_log)}", timeout=10).ok:
            prev = self.download(self.previous_log, dest / f"{self.name}-{self.role}-previous.log")
        return [*super().logs(dest), *([prev] if prev is not None else [])]

    @property
    def started_marker(self) -> str:
        return f"[KafkaServer id={self.broker_id}] started"

    def started(self) -> bool:
        """The broker says it finished starting (``KafkaServer.startup``); before that a SIGTERM
        halts it ("Kafka server is still starting up, cannot shut down!")."""
        return self.remote.run(f"grep -qF {shlex.quote(self.started_marker)} {shlex.quote(self.logfile)}",
                               timeout=10).ok

    def start_state(self) -> str:
        """``started``, ``starting`` or ``exited``, in one remote command (over SSH each is a round trip)."""
        res = self.remote.run(start_probe(self.started_marker, self.logfile, self.pidfile), timeout=10)
        return res.stdout.strip() or "starting"  # a probe that failed to run proves nothing

    def wait_started(self, timeout: float = 180.0) -> None:
        """Until Kafka says it started; a process that exits first fails at once (``exited_error``)."""

        def settled() -> str | None:
            state = self.start_state()
            return None if state == "starting" else state

        if (state := wait_until(settled, timeout, poll=0.25)) == "exited":
            raise self.exited_error("before it started")
        if state != "started":
            raise RemoteError(f"{self.name}: {self.label} did not start within {timeout:.0f}s; "
                              f"its log ends: {self.log_tail(EXIT_LOG_LINES)}")

    @staticmethod
    def run_files(workdir: str) -> list[str]:
        """What one run leaves in a broker's workdir (its log dirs, its logs, its exit status): removed
        before the next run on a warm cluster, whose ZooKeeper is empty again (a log dir's
        meta.properties names the old cluster id, and Kafka refuses to start on it; an old log would
        be parsed as this run's)."""
        return [f"{workdir}/{name}" for name in ("data", "kafka.log", "kafka-previous.log", "kafka.exit")]

    def wipe(self) -> None:
        """Delete the broker's log dirs (its partitions and meta.properties)."""
        self.remote.run(f"rm -rf {shlex.quote(self.data_dir)}", check=False)

    # -- the broker's own account, parsed from its log (base.kafkalog) -------------------------
    def parsed_events(self, dest: Path) -> list[Event] | None:
        """Every start's log, oldest first, downloaded into ``dest`` and parsed; None without a log."""
        from base.kafkalog import broker_events

        logs = [self.download(p, dest / f"{self.name}-{i}.log") for i, p in enumerate((self.previous_log, self.logfile))]
        return broker_events(logs, self.broker_id, self.settings.session_timeout_ms, self.run)

    def collect_events(self, dest: Path) -> Path | None:
        """The events the broker's log says, as ``dest/kafka-N.jsonl`` (source ``agent:N``)."""
        from base.kafkalog import write_events

        with owned_tempdir(KAFKA_LOGS_PREFIX) as tmp:
            events = self.parsed_events(Path(tmp))
        return None if events is None else write_events(events, dest / f"kafka-{self.broker_id}.jsonl")

    def events(self) -> list[Event]:
        """The broker's events so far (its log downloaded and parsed)."""
        assert self.peek_dir is not None, "events() needs a peek_dir"
        return self.parsed_events(self.peek_dir) or []

    def wait_for(self, pred: Callable[[Event], bool], timeout: float, poll: float = 0.2) -> Event | None:
        return wait_until(lambda: next((ev for ev in self.events() if pred(ev)), None), timeout, max(poll, 0.25))


def recording_exit(command: str, exit_file: str) -> str:
    """``command`` run by a shell that writes its exit status to ``exit_file`` when it ends by itself.
    The shell leads the process group the harness signals: a SIGTERM reaches both, and the shell
    (trapping it) waits for the command to finish its shutdown, so a stop still sees the group go
    only once the command is gone; a SIGKILL of the group ends both and writes nothing; SIGSTOP and
    SIGCONT reach both, so the shell's state is the command's (stopped, or not)."""
    script = (f"trap : TERM; {command} & c=$!; wait $c; s=$?; "
              f"while kill -0 $c 2>/dev/null; do wait $c; s=$?; done; echo $s > {shlex.quote(exit_file)}")
    return f"sh -c {shlex.quote(script)}"


def start_probe(marker: str, logfile: str, pidfile: str) -> str:
    """Shell printing ``started`` when ``logfile`` holds ``marker``, else ``exited`` when the
    process of ``pidfile`` is gone (``parse_stat``'s stopped: none, or a zombie), else ``starting``."""
    return (f"if grep -qF {shlex.quote(marker)} {shlex.quote(logfile)} 2>/dev/null; then echo started; "
            f"else s=$(ps -o stat= -p \"$(cat {shlex.quote(pidfile)} 2>/dev/null)\" 2>/dev/null); "
            "case \"$s\" in ''|[ZXx]*) echo exited;; *) echo starting;; esac; fi")


def main(argv: list[str] | None = None) -> int:
    """``python -m base.components.kafka fetch VERSION``: resolve and cache; print the libs dir."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "fetch":
        print("usage: python -m base.components.kafka fetch VERSION", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        print(fetch_kafka(args[1]))
    except UsageError as e:
        print(f"harness: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main())
