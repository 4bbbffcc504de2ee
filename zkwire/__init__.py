"""The shared ZooKeeper client wire codec (zk-wire.md) and the raw pipelining client.

``zkwire.codec`` is pure encode/decode; ``zkwire.client`` holds
``pipelined_register`` (KAFKA-14845's ConnectRequest + multi on one socket) and ``RawSession``.
Both the ZooKeeper wire proxy (``nemesis.zkproxy``) and the broker agent's pipelining session
use this package; see docs/zkproxy.md.
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

__all__ = [  # plus every public codec name via the star import
    "PipelinedResult",
    "RawSession",
    "build_pipelined_register",
    "parse_addr",
    "pipelined_register",
    "registration_multi",
]
