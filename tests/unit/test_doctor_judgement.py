"""`harness doctor`'s judgement on plain probe output (no SSH)."""

from __future__ import annotations

from harness.doctor import judge, parse_probe, probe_command

GOOD = "uid=0\nsudo=no\ndisk_kb=5000000\njava=openjdk version \"17.0.15\" 2025-04-15\n" \
       "python=3.11.7\nkazoo=2.11.0\ncontrol=yes\n"


def checks(text: str, sent: float = 100.0, received: float = 100.002, clock: str = "100.001", **roles: bool):
    probe = {**parse_probe(text), "clock": clock}
    return {c.what: c for c in judge("n1", probe, sent, received, 0.1, **{"java": True, "python": True,
                                                                           "control": True, **roles})}


def test_a_ready_node_passes_every_check():
    got = checks(GOOD)
    assert all(c.ok for c in got.values()), [c.line() for c in got.values() if not c.ok]
    assert set(got) == {"root", "clock", "disk", "java", "python", "toxiproxy"}
    assert got["clock"].detail.startswith("offset +0.0 ms ± 1.0 ms")


def test_each_problem_says_what_to_fix():
    bad = GOOD.replace("uid=0", "uid=1000").replace("disk_kb=5000000", "disk_kb=1000") \
        .replace('"17.0.15"', '"1.8.0_392"').replace("kazoo=2.11.0", "kazoo=missing ModuleNotFoundError") \
        .replace("control=yes", "control=no [Errno 111] Connection refused")
    got = checks(bad, clock="100.5")
    assert not any(c.ok for c in got.values())
    assert "password-less sudo" in got["root"].detail
    assert "needs skew ≥ 500" in got["clock"].detail
    assert got["java"].detail.startswith("Java 8 is too old")
    assert "harness setup" in got["python"].detail
    assert "Connection refused" in got["toxiproxy"].detail
    assert checks(GOOD.replace("python=3.11.7", "python=3.9.2"))["python"].detail.startswith("Python 3.9.2 is too old")


def test_unreadable_answers_are_failures_not_passes():
    got = checks("", clock="")
    assert not got["clock"].ok and not got["disk"].ok and not got["java"].ok and not got["python"].ok
    assert not got["toxiproxy"].ok
    assert set(checks(GOOD, java=False, python=False, control=False)) == {"root", "clock", "disk"}


def test_the_probe_asks_only_what_the_roles_need():
    zk = probe_command("/var/tmp/zkfence", "java", None, None)
    broker = probe_command("/var/tmp/zkfence", None, "/usr/bin/python3", ("127.0.0.1", 4000))
    assert "-version" in zk and "kazoo" not in zk
    assert "kazoo" in broker and "4000)" in broker and "-version" not in broker
