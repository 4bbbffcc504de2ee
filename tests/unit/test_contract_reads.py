"""Every project-history checker implements the checker protocol and reads only what the event
contract (``history.kinds``) declares: kinds that exist, fields those kinds carry, one type per
field. What a checker does not declare it does not get (the loaders project exactly the
declared reads): ``tests/integration/test_check_fencing.py`` runs each checker alone on that."""

from __future__ import annotations

import pytest

from checkers.checker import ENVELOPE, Checker, columns, field_types, union
from checkers.project import CHECKER_NAMES, make_checkers, select
from history.kinds import KINDS, TYPES


@pytest.mark.parametrize("checker", make_checkers(), ids=lambda c: c.name)
def test_checker_implements_the_protocol_and_reads_only_contract_fields(checker: Checker) -> None:
    assert isinstance(checker, Checker)
    assert checker.reads, f"{checker.name} reads nothing"
    for kind, fields in checker.reads.items():
        assert kind in KINDS, f"{checker.name} reads kind {kind!r}, which no source writes"
        assert not KINDS[kind].open or set(fields) <= set(KINDS[kind].fields)
        undeclared = set(fields) - set(KINDS[kind].fields)
        assert not undeclared, f"{checker.name} reads {sorted(undeclared)} of {kind}, which it does not carry"


def test_the_union_of_all_reads_gives_every_field_one_type() -> None:
    types = field_types(union(c.reads for c in make_checkers()))
    assert set(types.values()) <= set(TYPES.values())
    assert columns(union(c.reads for c in make_checkers()))[: len(ENVELOPE)] == ENVELOPE


def test_a_field_read_with_two_types_is_refused() -> None:
    # ``bounced`` is a broker list in broker_change but a flag in broker_startup_handled.
    with pytest.raises(ValueError, match="bounced"):
        field_types({"broker_change": ("bounced",), "broker_startup_handled": ("bounced",)})


def test_names_are_unique_snake_case_and_in_report_order() -> None:
    assert len(set(CHECKER_NAMES)) == len(CHECKER_NAMES)
    assert all(n.replace("_", "").isalpha() and n.islower() for n in CHECKER_NAMES)
    assert CHECKER_NAMES[:3] == ("registration_epochs", "single_registrant", "registration_liveness")
    assert [c.name for c in select(["zxid_session", "registration_epochs"])] == ["registration_epochs", "zxid_session"]


def test_unknown_names_are_a_value_error_naming_them() -> None:
    with pytest.raises(ValueError, match="registration-liveness.*zz"):
        select(["registration-liveness", "zz", "bounce_handling"])


def test_only_the_registration_sweeps_run_without_spark() -> None:
    assert {c.name for c in make_checkers() if c.local} == {"registration_epochs", "registration_liveness"}


def test_the_liveness_margin_reaches_the_checker() -> None:
    (live,) = select(["registration_liveness"], margin_ms=1234)
    assert live.margin_ms == 1234


def test_naming_no_checker_is_refused_not_valid() -> None:
    with pytest.raises(ValueError, match="none named"):
        select([])
