"""The ZooKeeper version of a run, recorded in run.json as ``zk_version`` so cross-run analysis can
group by it.

``source = "maven"`` names the version. Otherwise (``preinstalled``/``debian``) the version is read
from the ``pom.properties`` Maven puts inside the ZooKeeper jar, found on the classpath as the
control node sees it (the local inventory's nodes share its filesystem; on remote nodes the same
path is assumed to hold the same package). None when no such jar is readable here.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from base.components.zookeeper import ZkSettings

_POM = "META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties"
_JAR = re.compile(r"^zookeeper(-\d[\w.-]*)?\.jar$")


def zk_version(zk: ZkSettings) -> str | None:
    if zk.version:
        return zk.version
    for entry in zk.classpath.split(":"):
        path = Path(entry)
        if _JAR.match(path.name) and path.is_file():
            return jar_version(path)
    return None


def jar_version(jar: Path) -> str | None:
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read(_POM).decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    return next((ln.split("=", 1)[1].strip() for ln in text.splitlines() if ln.startswith("version=")), None)
