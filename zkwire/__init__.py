"""The ZooKeeper client wire codec and the raw pipelining client: shipped with the agent.

Role in the data path: the bytes between a ZooKeeper client and server. The broker agent's
pipelining session (KAFKA-14845) writes them with ``zkwire.client``; the wire fault-injection proxy
(``nemesis.zkproxy``, control node) parses a copy of every frame with the codec. It imports nothing
but the standard library. ``zkwire.codec`` gathers every codec name (defined in ``constants``,
``jute``, ``framing``, ``records``, ``request_bodies``, ``reply_bodies``, ``messages``); this package
re-exports them all plus the clients, so ``import zkwire as z; z.OpCode`` works. The field layouts
are ZooKeeper's ``zookeeper-jute/src/main/resources/zookeeper.jute``; see docs/zkproxy.md.
"""

from zkwire.client import (
    PipelinedResult,
    RawSession,
    build_pipelined_register,
    parse_addr,
    pipelined_register,
    registration_multi,
)
from zkwire.codec import *  # noqa: F403
from zkwire.codec import __all__ as _codec_names

__all__ = [
    "PipelinedResult",
    "RawSession",
    "build_pipelined_register",
    "parse_addr",
    "pipelined_register",
    "registration_multi",
    *_codec_names,
]
