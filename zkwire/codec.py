"""The ZooKeeper client wire codec in one namespace (``from zkwire.codec import X``).

Nothing is defined here; each piece lives in the module that owns it:

- ``zkwire.constants``: opcodes, error codes, create flags, special xids, fixed lengths;
- ``zkwire.jute``: the Jute primitives (``Reader``, ``Writer``) and the ``Record`` base;
- ``zkwire.framing``: the length-prefixed framing (the project's only implementation);
- ``zkwire.records``: handshake, headers, ``Stat``, ``ACL``, the multi header;
- ``zkwire.request_bodies`` / ``zkwire.reply_bodies``: one record per body shape, by opcode;
- ``zkwire.messages``: framed encoders and the tolerant parsers a proxy uses.

Everything is pure: bytes in, dataclasses out, and back.
"""

from zkwire.constants import (
    CONNECT_REQUEST_LEN,
    CONNECT_RESPONSE_LEN,
    ERR_NAMES,
    FOUR_LETTER_WORDS,
    FRAME_HEADER_LEN,
    JUTE_EXTRASIZE,
    JUTE_MAXBUFFER,
    OP_CODES,
    OP_NAMES,
    PASSWD_LEN,
    STAT_LEN,
    XID_AUTH,
    XID_NOTIFICATION,
    XID_PING,
    XID_SET_WATCHES,
    CreateFlags,
    Err,
    OpCode,
    Perms,
    err_name,
    is_ephemeral_flags,
    is_four_letter_word,
    op_code,
    op_name,
)
from zkwire.framing import FrameDecoder, FrameError, frame, frame_length, read_frame, recv_frame
from zkwire.jute import JuteError, ProtocolError, Reader, Record, Writer
from zkwire.messages import (
    ParsedReply,
    ParsedRequest,
    SubOp,
    encode_connect_request,
    encode_connect_response,
    encode_notification,
    encode_reply,
    encode_request,
    parse_reply,
    parse_request,
    record_path,
    reply_kind,
    request_kind,
)
from zkwire.records import (
    ACL,
    MULTI_TERMINATOR,
    OPEN_ACL_UNSAFE,
    ConnectRequest,
    ConnectResponse,
    EmptyRecord,
    MultiHeader,
    ReplyHeader,
    RequestHeader,
    Stat,
)
from zkwire.reply_bodies import (
    REPLY_TYPES,
    Create2Response,
    ErrorResponse,
    ErrorResult,
    GetACLResponse,
    GetAllChildrenNumberResponse,
    GetChildren2Response,
    GetChildrenResponse,
    GetDataResponse,
    GetEphemeralsResponse,
    MultiResponse,
    PathResponse,
    SaslResponse,
    StatResponse,
    WatcherEvent,
    WhoAmIResponse,
)
from zkwire.request_bodies import (
    REQUEST_TYPES,
    AuthPacket,
    CheckVersionRequest,
    CreateRequest,
    DeleteRequest,
    ExistsRequest,
    GetChildrenRequest,
    GetDataRequest,
    MultiRequest,
    PathModeRequest,
    PathRequest,
    PathVersionRequest,
    PathWatchRequest,
    ReconfigRequest,
    SaslRequest,
    SetACLRequest,
    SetDataRequest,
    SetWatches,
)

__all__ = [
    # constants
    "CONNECT_REQUEST_LEN", "CONNECT_RESPONSE_LEN", "ERR_NAMES", "FOUR_LETTER_WORDS", "FRAME_HEADER_LEN",
    "JUTE_EXTRASIZE", "JUTE_MAXBUFFER", "OP_CODES", "OP_NAMES", "PASSWD_LEN", "STAT_LEN", "XID_AUTH", "XID_NOTIFICATION",
    "XID_PING", "XID_SET_WATCHES", "CreateFlags", "Err", "OpCode", "Perms", "err_name", "is_ephemeral_flags",
    "is_four_letter_word", "op_code", "op_name",
    # framing
    "FrameDecoder", "FrameError", "frame", "frame_length", "read_frame", "recv_frame",
    # jute
    "JuteError", "ProtocolError", "Reader", "Record", "Writer",
    # messages
    "ParsedReply", "ParsedRequest", "SubOp", "encode_connect_request", "encode_connect_response",
    "encode_notification", "encode_reply", "encode_request", "parse_reply", "parse_request", "record_path",
    "reply_kind", "request_kind",
    # records
    "ACL", "MULTI_TERMINATOR", "OPEN_ACL_UNSAFE", "ConnectRequest", "ConnectResponse", "EmptyRecord",
    "MultiHeader", "ReplyHeader", "RequestHeader", "Stat",
    # reply bodies
    "REPLY_TYPES", "Create2Response", "ErrorResponse", "ErrorResult", "GetACLResponse", "GetAllChildrenNumberResponse",
    "GetChildren2Response", "GetChildrenResponse", "GetDataResponse", "GetEphemeralsResponse", "MultiResponse",
    "PathResponse", "SaslResponse", "StatResponse", "WatcherEvent", "WhoAmIResponse",
    # request bodies
    "REQUEST_TYPES", "AuthPacket", "CheckVersionRequest", "CreateRequest", "DeleteRequest", "ExistsRequest",
    "GetChildrenRequest", "GetDataRequest", "MultiRequest", "PathModeRequest", "PathRequest",
    "PathVersionRequest", "PathWatchRequest", "ReconfigRequest", "SaslRequest", "SetACLRequest",
    "SetDataRequest", "SetWatches",
]
