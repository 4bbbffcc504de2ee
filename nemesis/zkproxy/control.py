"""The ZooKeeper proxy's control API: the shared one (``nemesis.wireproxy.control``), whose rule
bodies this module parses with the ZooKeeper dialect (``nemesis.zkproxy.rules.DIALECT``)."""

from __future__ import annotations

from typing import Any

from nemesis.wireproxy import control as _control
from nemesis.wireproxy.control import (
    MAX_BODY,
    MAX_DEPTH,
    MAX_ERROR,
    ROUTES,
    ControlServer,
    _HttpError,
    body_length,
    close_body,
    decode_body,
    match_route,
    one_line,
)
from nemesis.zkproxy.rules import DIALECT, Rule

__all__ = ["MAX_BODY", "MAX_DEPTH", "MAX_ERROR", "ROUTES", "ControlServer", "_HttpError", "body_length",
           "close_body", "decode_body", "match_route", "one_line", "rules_body", "validate"]


def rules_body(body: Any, start_index: int = 0) -> list[Rule]:
    """``POST /rules`` with ZooKeeper match keys."""
    return _control.rules_body(body, DIALECT, start_index)


def validate(method: str, pattern: tuple[str | None, ...], params: list[str], body: Any,
             start_index: int = 0) -> Any:
    """The pure half of a request to the ZooKeeper proxy (``nemesis.wireproxy.control.validate``)."""
    return _control.validate(method, pattern, params, body, DIALECT, start_index)
