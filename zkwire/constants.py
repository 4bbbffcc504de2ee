"""ZooKeeper wire constants: opcodes, error codes, create flags, special xids, fixed lengths.

Values are ZooKeeper's own: ``ZooDefs.OpCode`` and ``ZooDefs.Perms``
(``zookeeper-server/src/main/java/org/apache/zookeeper/ZooDefs.java``), ``KeeperException.Code``
(``.../KeeperException.java``), ``CreateMode`` (``.../CreateMode.java``) and the special xids of
``ClientCnxn`` (``.../ClientCnxn.java``), all in the apache/zookeeper repository. Pure tables.
"""

from __future__ import annotations

JUTE_MAXBUFFER = 0xFFFFF  # jute.maxbuffer default (1 MiB - 1); the server's check is len > maxbuffer
# zookeeper.jute.maxbuffer.extrasize floor (BinaryInputArchive): a reply may carry a full
# jute.maxbuffer payload plus its header, stat and lengths, so a proxy allows this much on top.
JUTE_EXTRASIZE = 1024
PROXY_MAX_FRAME = JUTE_MAXBUFFER + JUTE_EXTRASIZE  # the proxy's default frame limit
FRAME_HEADER_LEN = 4
CONNECT_REQUEST_LEN = 45  # 44 without readOnly (very old clients)
CONNECT_RESPONSE_LEN = 37  # 36 without readOnly
STAT_LEN = 68
PASSWD_LEN = 16

# Special xids: the client's ClientCnxn reserves these for non-request traffic.
XID_NOTIFICATION = -1
XID_PING = -2
XID_AUTH = -4
XID_SET_WATCHES = -8


class OpCode:
    """ZooDefs.OpCode."""

    NOTIFICATION = 0
    CREATE = 1
    DELETE = 2
    EXISTS = 3
    GET_DATA = 4
    SET_DATA = 5
    GET_ACL = 6
    SET_ACL = 7
    GET_CHILDREN = 8
    SYNC = 9
    PING = 11
    GET_CHILDREN2 = 12
    CHECK = 13
    MULTI = 14
    CREATE2 = 15
    RECONFIG = 16
    CHECK_WATCHES = 17
    REMOVE_WATCHES = 18
    CREATE_CONTAINER = 19
    DELETE_CONTAINER = 20
    CREATE_TTL = 21
    MULTI_READ = 22
    AUTH = 100
    SET_WATCHES = 101
    SASL = 102
    GET_EPHEMERALS = 103
    GET_ALL_CHILDREN_NUMBER = 104
    SET_WATCHES2 = 105
    ADD_WATCH = 106
    WHO_AM_I = 107
    CREATE_SESSION = -10
    CLOSE_SESSION = -11
    ERROR = -1


OP_NAMES: dict[int, str] = {
    0: "notification",
    1: "create",
    2: "delete",
    3: "exists",
    4: "getData",
    5: "setData",
    6: "getACL",
    7: "setACL",
    8: "getChildren",
    9: "sync",
    11: "ping",
    12: "getChildren2",
    13: "check",
    14: "multi",
    15: "create2",
    16: "reconfig",
    17: "checkWatches",
    18: "removeWatches",
    19: "createContainer",
    20: "deleteContainer",
    21: "createTTL",
    22: "multiRead",
    100: "auth",
    101: "setWatches",
    102: "sasl",
    103: "getEphemerals",
    104: "getAllChildrenNumber",
    105: "setWatches2",
    106: "addWatch",
    107: "whoAmI",
    -10: "createSession",
    -11: "closeSession",
    -1: "error",
}
OP_CODES: dict[str, int] = {name: code for code, name in OP_NAMES.items()}


def op_name(op: int | None) -> str | None:
    if op is None:
        return None
    return OP_NAMES.get(op, f"op{op}")


def op_code(name_or_code: str | int) -> int:
    """Resolve ``"multi"``/``"14"``/``14`` to 14. Raises ``KeyError`` for an unknown name."""
    if isinstance(name_or_code, int):
        return name_or_code
    s = name_or_code.strip()
    if s.lstrip("-").isascii() and s.lstrip("-").isdigit():  # not "²": isdigit() but not int()
        return int(s)
    return OP_CODES[s]


class Err:
    """KeeperException.Code values."""

    OK = 0
    SYSTEM_ERROR = -1
    RUNTIME_INCONSISTENCY = -2
    DATA_INCONSISTENCY = -3
    CONNECTION_LOSS = -4
    MARSHALLING_ERROR = -5
    UNIMPLEMENTED = -6
    OPERATION_TIMEOUT = -7
    BAD_ARGUMENTS = -8
    NEW_CONFIG_NO_QUORUM = -13
    RECONFIG_IN_PROGRESS = -14
    UNKNOWN_SESSION = -12
    API_ERROR = -100
    NO_NODE = -101
    NO_AUTH = -102
    BAD_VERSION = -103
    NO_CHILDREN_FOR_EPHEMERALS = -108
    NODE_EXISTS = -110
    NOT_EMPTY = -111
    SESSION_EXPIRED = -112
    INVALID_CALLBACK = -113
    INVALID_ACL = -114
    AUTH_FAILED = -115
    SESSION_MOVED = -118
    NOT_READONLY = -119
    EPHEMERAL_ON_LOCAL_SESSION = -120
    NO_WATCHER = -121
    REQUEST_TIMEOUT = -122
    RECONFIG_DISABLED = -123
    SESSION_CLOSED_REQUIRE_SASL_AUTH = -124
    QUOTA_EXCEEDED = -125
    THROTTLED_OP = -127


ERR_NAMES: dict[int, str] = {
    v: k for k, v in vars(Err).items() if not k.startswith("_") and isinstance(v, int)
}


def err_name(code: int | None) -> str | None:
    if code is None:
        return None
    return ERR_NAMES.get(code, f"ERR{code}")


class CreateFlags:
    """CreateMode flag values (the ``flags`` int of a create)."""

    PERSISTENT = 0
    EPHEMERAL = 1
    PERSISTENT_SEQUENTIAL = 2
    EPHEMERAL_SEQUENTIAL = 3
    CONTAINER = 4
    PERSISTENT_WITH_TTL = 5
    PERSISTENT_SEQUENTIAL_WITH_TTL = 6


def is_ephemeral_flags(flags: int) -> bool:
    return flags in (CreateFlags.EPHEMERAL, CreateFlags.EPHEMERAL_SEQUENTIAL)


class Perms:
    READ = 1
    WRITE = 2
    CREATE = 4
    DELETE = 8
    ADMIN = 16
    ALL = 31


FOUR_LETTER_WORDS = frozenset(
    w.encode()
    for w in (
        "conf cons crst dirs dump envi gtmk ruok stmk srvr srst stat wchc wchp wchs mntr isro hash"
    ).split()
)


def is_four_letter_word(first4: bytes) -> bool:
    """True if the first four bytes of a connection are a four-letter word (run raw, not framed)."""
    return bytes(first4[:4]) in FOUR_LETTER_WORDS

