"""What every writer writes (``history.kinds.WRITTEN``) and what each checker needs of it: each need
names a declared kind, its fields and op types (a typo would silently need nothing), and each checker
needs no field it does not read. ``Need.missing`` on plain records."""

from __future__ import annotations

from checkers.checker import needs_of
from checkers.project import make_checkers
from history.kinds import KINDS, REGISTRATION_OWNER, WRITTEN, Need


def test_every_written_need_names_declared_kinds_fields_and_types() -> None:
    wrong = []
    for n in (*WRITTEN, REGISTRATION_OWNER):
        kind = KINDS.get(n.kind)
        if kind is None:
            wrong.append(f"{n.kind}: no such kind in history.kinds.KINDS")
            continue
        wrong += [f"{n.kind}.{f}: not a field of the kind" for f in n.fields + tuple(w for w, _ in n.when)
                  if f not in kind.fields]
        wrong += [f"{n.kind} type {t}: the kind is not written with it" for t in n.types if t not in kind.types]
    assert not wrong, "history.kinds.WRITTEN: " + "; ".join(wrong)


def test_a_checker_needs_only_what_it_reads() -> None:
    wrong = [f"{c.name} needs {n.kind}.{f} but does not read it" for c in make_checkers() for n in needs_of(c)
             for f in n.fields if f not in c.reads.get(n.kind, ())]
    assert not wrong, wrong


def test_the_epoch_fencing_checkers_need_what_they_read() -> None:
    needs = {c.name: {(n.kind, f) for n in needs_of(c) for f in n.fields} for c in make_checkers()}
    assert ("control_recv", "controller_epoch") in needs["control_request_epochs"]
    assert ("register", "owner") in needs["zxid_replay"] and ("register", "owner") in needs["single_registrant"]
    assert ("register", "owner") not in needs["registration_epochs"]  # a real broker's log does not say it


def record(type_: str = "ok", **value: object) -> dict:
    return {"src": "client", "seq": 1, "f": "poll", "type": type_, "value": value}


def test_missing_is_absent_not_null_and_only_where_the_need_applies() -> None:
    n = Need("poll", ("offsets", "values"), ("ok",))
    assert n.missing(record(offsets=[1], values=None)) == ()
    assert n.missing(record(offsets=[1])) == ("values",)
    assert n.missing(record("invoke")) == ()
    assert Need("poll", ("hw",)).missing({**record(), "value": None}) == ("hw",)
    s2c = Need("frame", ("zxid",), when=(("dir", ("s2c",)),))
    assert s2c.missing({"type": "event", "value": {"dir": "c2s"}}) == ()
    assert s2c.missing({"type": "event", "value": {"dir": "s2c"}}) == ("zxid",)
    assert s2c.missing({"type": "event", "value": {}}) == ("zxid",)  # no dir: it cannot say it is c2s


def test_each_need_keeps_its_own_first_events(tmp_path) -> None:  # noqa: ANN001
    """Many events lacking one need do not crowd out a later one lacking another: each checker is told."""
    import json

    from history import Scan, scan_lines

    lines = [{"src": "client", "seq": i + 1, "t_wall": 1.0, "type": "ok", "f": "poll", "value": {"values": []}}
             for i in range(Scan.KEEP_LACKING + 10)]
    lines.append({"src": "client", "seq": len(lines) + 1, "t_wall": 1.0, "type": "ok", "f": "send", "value": {}})
    p = tmp_path / "h.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    offsets, value = Need("poll", ("offsets",), ("ok",)), Need("send", ("value",))
    scan = Scan(str(p))
    for _ in scan_lines(p, scan, needs=(offsets, value)):
        pass
    assert sum(offsets in x.needs for x in scan.lacking) == Scan.KEEP_LACKING
    assert [x.id for x in scan.lacking if value in x.needs] == [f"client/{len(lines)}"]
