"""The agents' control port answers only requests carrying the run's token (agent.net)."""

from __future__ import annotations

import pytest

from agent import errors
from agent.net import ControlServer, request, use_token


@pytest.fixture
def server():
    seen: list[dict] = []
    srv = ControlServer("127.0.0.1", 0, lambda msg: (seen.append(msg), {"error_code": 0})[1], token="s3cret")
    srv.start()
    yield f"127.0.0.1:{srv.port}", seen
    srv.close()
    use_token("")


def test_a_request_without_the_token_is_refused_and_never_handled(server):
    addr, seen = server
    use_token("")
    assert request(addr, {"type": "state"})["error_code"] == errors.CLUSTER_AUTHORIZATION_FAILED
    use_token("wrong")
    assert request(addr, {"type": "state"})["error_code"] == errors.CLUSTER_AUTHORIZATION_FAILED
    assert seen == []


def test_the_runs_token_gets_through_and_the_handler_never_sees_it(server):
    addr, seen = server
    use_token("s3cret")
    assert request(addr, {"type": "state"}) == {"error_code": 0}
    assert seen == [{"type": "state"}]
