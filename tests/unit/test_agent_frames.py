import socket
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.frames import FrameDecoder, FrameError, decode_body, encode, recv_frame, send_frame

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
objects = st.dictionaries(st.text(max_size=10), json_values, max_size=6)


@given(st.lists(objects, min_size=1, max_size=5), st.integers(min_value=1, max_value=7))
def test_roundtrip_any_split(objs, chunk):
    data = b"".join(encode(o) for o in objs)
    dec = FrameDecoder()
    out = []
    for i in range(0, len(data), chunk):
        out += dec.feed(data[i : i + chunk])
    assert out == objs
    assert dec.pending == 0


def test_length_prefix_is_big_endian_body_length():
    b = encode({"a": 1})
    (n,) = struct.unpack(">I", b[:4])
    assert n == len(b) - 4
    assert decode_body(b[4:]) == {"a": 1}


def test_64bit_ids_exact():
    big = 2**62 + 12345
    assert FrameDecoder().feed(encode({"czxid": big})) == [{"czxid": big}]


def test_rejects_non_object_and_garbage_and_oversize():
    with pytest.raises(FrameError):
        encode([1, 2])  # type: ignore[arg-type]
    with pytest.raises(FrameError):
        FrameDecoder().feed(struct.pack(">I", 3) + b"[1]")
    with pytest.raises(FrameError):
        FrameDecoder().feed(struct.pack(">I", 2) + b"\xff\xfe")
    with pytest.raises(FrameError):
        FrameDecoder(max_len=10).feed(struct.pack(">I", 11))


def test_socket_helpers_and_eof():
    a, b = socket.socketpair()
    with a, b:
        send_frame(a, {"type": "state"})
        assert recv_frame(b) == {"type": "state"}
        a.shutdown(socket.SHUT_WR)
        assert recv_frame(b) is None


def test_eof_mid_frame_is_an_error():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(encode({"x": "y"})[:6])
        a.shutdown(socket.SHUT_WR)
        with pytest.raises(ConnectionError):
            recv_frame(b)
