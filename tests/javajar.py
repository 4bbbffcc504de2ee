"""A jar of one Java class compiled here with this machine's javac (the one the harness builds its
JVM functions with), for tests that hand Spark a user's jar or package."""

from __future__ import annotations

import subprocess
from pathlib import Path

from checkers import udfs


def compile_jar(qualified_name: str, source: str, jar: Path, work: Path, classpath: str | None = None) -> Path:
    """``source``, the class ``qualified_name``, compiled under ``work`` (against ``classpath``) into
    ``jar``."""
    javac = udfs.javac()
    assert javac is not None, "javac is on this machine: every session has the functions' jar"
    src = work / "src" / f"{qualified_name.replace('.', '/')}.java"
    src.parent.mkdir(parents=True)
    src.write_text(source, encoding="utf-8")
    classes = work / "classes"
    subprocess.run([str(javac), "-d", str(classes), *(["-cp", classpath] if classpath else []), str(src)],
                   check=True, timeout=120)
    jar.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(javac.with_name("jar")), "cf", str(jar), "-C", str(classes), "."], check=True, timeout=60)
    return jar
