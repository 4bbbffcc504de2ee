"""The wire codec is total (issue 46.4): any bytes decode to a frame or raise ``JuteError``, never
``RecursionError``, ``struct.error``, ``UnicodeDecodeError``, ``IndexError``..., and what it accepts
it read right (it encodes back to a frame that decodes the same). Property tests with small budgets;
bench/fuzz.py runs the same oracle (tests/wire_samples.py) over 10,000+ inputs."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zkwire as z
from tests import wire_samples as ws

REQUESTS = ws.request_bodies()
REPLIES = ws.reply_bodies()
REPLY_OPS = [None, *sorted(z.REPLY_TYPES)]


def test_every_sample_is_accepted() -> None:
    assert [ws.decode(b, "c2s") for _, b in REQUESTS] == ["accepted"] * len(REQUESTS)
    assert [ws.decode(b, "s2c", op) for op, b in REPLIES] == ["accepted"] * len(REPLIES)
    assert ws.decode(ws.connect_request(), "connect_req") == "accepted"
    assert ws.decode(ws.connect_response(), "connect_resp") == "accepted"


@pytest.mark.parametrize("depth", [1, 2, 100, 110_000])
@pytest.mark.parametrize("reply", [False, True])
def test_a_nested_multi_is_a_protocol_error(depth: int, reply: bool) -> None:
    """110,000 levels fit in one 1 MiB frame; this used to be a RecursionError."""
    body = ws.nested_multi(depth, reply)
    with pytest.raises(z.ProtocolError, match="nested multi"):
        z.parse_reply(body, z.OpCode.MULTI) if reply else z.parse_request(body)
    with pytest.raises(z.ProtocolError):
        (z.MultiResponse if reply else z.MultiRequest).decode(body[16 if reply else 8:])


def test_a_nested_multi_read_is_refused_too() -> None:
    item = struct.pack(">i?i", z.OpCode.MULTI_READ, False, -1)  # multi > multiRead: no flatter
    body = struct.pack(">ii", 1, z.OpCode.MULTI) + item + struct.pack(">i?i", -1, True, -1) * 2
    with pytest.raises(z.ProtocolError, match="nested multiRead"):
        z.parse_request(body)


def test_protocol_errors_are_jute_errors() -> None:
    """One exception type for callers that only care that the bytes were refused."""
    assert issubclass(z.ProtocolError, z.JuteError) and issubclass(z.FrameError, z.ProtocolError)


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_as_a_request(body: bytes) -> None:
    assert ws.decode(body, "c2s") in ("accepted", "refused")


@settings(max_examples=300)
@given(st.binary(max_size=200), st.sampled_from(REPLY_OPS))
def test_arbitrary_bytes_as_a_reply(body: bytes, op: int | None) -> None:
    assert ws.decode(body, "s2c", op) in ("accepted", "refused")


@settings(max_examples=100)
@given(st.binary(max_size=80), st.sampled_from(["connect_req", "connect_resp"]))
def test_arbitrary_bytes_as_a_handshake(body: bytes, direction: str) -> None:
    assert ws.decode(body, direction) in ("accepted", "refused")


@settings(max_examples=300)
@given(st.sampled_from(REQUESTS), st.randoms(use_true_random=False))
def test_mutated_requests(sample: tuple[int, bytes], rnd: random.Random) -> None:
    assert ws.decode(ws.mutants(rnd, sample[1]), "c2s") in ("accepted", "refused")


@settings(max_examples=300)
@given(st.sampled_from(REPLIES), st.randoms(use_true_random=False), st.booleans())
def test_mutated_replies(sample: tuple[int | None, bytes], rnd: random.Random, other_op: bool) -> None:
    op = rnd.choice(REPLY_OPS) if other_op else sample[0]  # a reply read as the answer to another request
    assert ws.decode(ws.mutants(rnd, sample[1]), "s2c", op) in ("accepted", "refused")


@settings(max_examples=100)
@given(st.lists(st.binary(max_size=12), max_size=12), st.integers(min_value=1, max_value=64))
def test_frame_decoder_on_arbitrary_chunks(chunks: list[bytes], max_len: int) -> None:
    dec = z.FrameDecoder(max_len)
    try:
        for c in chunks:
            for body in dec.feed(c):
                assert len(body) <= max_len
    except z.FrameError:
        pass
