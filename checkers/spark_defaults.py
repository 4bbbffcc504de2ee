"""The user's own settings for the driver, read before a session starts: ``spark-defaults.conf``
and ``$PYSPARK_SUBMIT_ARGS``.

A setting of the session the harness builds replaces the user's. Where both have a say, the
harness adds to the user's value instead (its jar to ``spark.jars``, its JVM options after those of
``spark.driver.extraJavaOptions``) or yields to it (``spark.driver.memory``), which needs the
user's value first. spark-submit, which pyspark runs with ``$PYSPARK_SUBMIT_ARGS`` to start the
driver's JVM, reads the ``--properties-file`` those arguments name, else
``$SPARK_CONF_DIR/spark-defaults.conf``, else ``$SPARK_HOME/conf/spark-defaults.conf``, where
pyspark sets ``SPARK_HOME`` to its own install when unset (Spark's ``SparkSubmitArguments``,
``Utils.getDefaultPropertiesFile`` and pyspark's ``find_spark_home``); with Spark 4's
``--load-spark-defaults``, both the named file and that one. The file is a Java properties file
(``java.util.Properties.load``), read as UTF-8 and its values trimmed, as Spark's
``Utils.getPropertiesFromFile`` reads it. The arguments' own ``--jars``, ``--driver-java-options`` (or
``--conf key=``) win over both the file and the session's setting when the driver starts, so the
harness adds to those in place.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def defaults_files() -> list[Path]:
    """The properties files spark-submit would read for a driver started now, the one whose value
    of a key wins first: the ``--properties-file`` the arguments name, and ``spark-defaults.conf``
    when they name none or also say ``--load-spark-defaults`` (Spark 4; checked on pyspark's own
    spark-submit: both files' keys reach the driver, the named file's where both set one)."""
    args = submit_args()
    named = [Path(args[i + 1]) for i in range(len(args) - 1) if args[i] == "--properties-file"][-1:]
    if named and "--load-spark-defaults" not in args:
        return named
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir:
        return [*named, Path(conf_dir) / "spark-defaults.conf"]
    home = os.environ.get("SPARK_HOME")
    if not home:
        from pyspark.find_spark_home import _find_spark_home

        try:
            home = _find_spark_home()
        except SystemExit:  # pyspark exits when it finds no Spark home
            return named
    return [*named, Path(home) / "conf" / "spark-defaults.conf"]


# the spark-submit options this module reads: only these are split at "=" (a value such as
# --driver-java-options '--add-opens=...' must stay one word)
_READ_OPTIONS = ("--conf", "--properties-file", "--jars", "--driver-java-options")


def submit_args() -> list[str]:
    """``$PYSPARK_SUBMIT_ARGS`` as spark-submit parses it, each ``--option=value`` of the options
    read here as two words."""
    out: list[str] = []
    for word in shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", "")):
        option, eq, value = word.partition("=")
        out += [option, value] if eq and option in _READ_OPTIONS else [word]
    return out


def _logical_lines(text: str) -> list[str]:
    """Natural lines joined where one ends in an odd number of backslashes, the next line's leading
    whitespace dropped; blank and comment lines left out."""
    out: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending is not None or raw.strip() else ""
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        body = line[:-1] if trailing % 2 else line
        pending = body if pending is None else pending + body
        if not trailing % 2:
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            try:
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse(text: str) -> dict[str, str]:
    """A properties file's keys and values (the last of a repeated key wins), values trimmed."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        i = 0
        while i < len(line) and line[i] not in "=: \t\f":
            i += 2 if line[i] == "\\" else 1
        key, rest = line[:i], line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        props[_unescape(key)] = _unescape(rest).strip()
    return props


def user_properties() -> dict[str, str]:
    """The keys and values the driver's properties files set (``defaults_files``: the first file's
    value of a key wins), each file read once; a file that cannot be read sets nothing."""
    props: dict[str, str] = {}
    for path in reversed(defaults_files()):
        try:
            props.update(parse(path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return props


# what spark-submit takes over a --conf of the key, for the keys the harness adds to
SUBMIT_OPTIONS = {"spark.jars": "--jars", "spark.driver.extraJavaOptions": "--driver-java-options"}


def added(key: str, ours: str, sep: str, props: Mapping[str, str]) -> str:
    """The session's ``key``: the user's value (``props``, their properties files), then ``ours`` (a
    list joined by ``sep``). Where ``$PYSPARK_SUBMIT_ARGS`` sets the key itself (its option in
    ``SUBMIT_OPTIONS``, else its last ``--conf key=``), spark-submit starts the driver with that
    whatever the session says, so ``ours`` is added there as well (in this process's environment,
    which pyspark reads when it starts the JVM)."""
    args = submit_args()
    option, prefix = SUBMIT_OPTIONS.get(key), ""
    at = [i + 1 for i in range(len(args) - 1) if args[i] == option]
    if not at:
        prefix = f"{key}="
        at = [i + 1 for i in range(len(args) - 1) if args[i] == "--conf" and args[i + 1].startswith(prefix)]
    if not at:
        theirs = props.get(key)
        return f"{theirs}{sep}{ours}" if theirs else ours
    i = at[-1]
    theirs = args[i].removeprefix(prefix)
    if theirs == ours or theirs.endswith(sep + ours):  # a second session in this process: there already
        return theirs
    merged = f"{theirs}{sep}{ours}" if theirs else ours
    args[i] = prefix + merged
    os.environ["PYSPARK_SUBMIT_ARGS"] = shlex.join(args)
    return merged
