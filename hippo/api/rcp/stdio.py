"""RCP over stdio: newline-delimited JSON-RPC on stdin/stdout (spec 5.1).

stdout carries protocol frames only: before serving, file descriptor 1 is
pointed at stderr, so a stray print or a native library's chatter cannot
corrupt the stream; frames go to a private duplicate of the original stdout.
Requests are answered in order; EOF or ``shutdown`` ends the loop.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from rcp import Errc

from hippo.api.auth import authenticate
from hippo.api.rcp.app import Service
from hippo.api.rcp.protocol import dumps, error_reply


def protocol_stdout() -> BinaryIO:
    """A private handle on the real stdout; fd 1 (and ``sys.stdout``) now go to stderr."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def serve(service: Service, stdin: BinaryIO, stdout: BinaryIO) -> None:
    limit = service.settings.max_body_bytes
    # Over stdio the caller is whoever started the server: HIPPO_API_KEY names them (else anonymous).
    key = os.environ.get("HIPPO_API_KEY")
    principal = authenticate({"X-API-Key": key} if key else {}, service.keys)
    connection = service.connection(service.context(principal))
    while True:
        line = stdin.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := stdin.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass  # drop the rest of the oversized line
            reply = dumps(error_reply(None, Errc.PAYLOAD_TOO_LARGE, f"message is over {limit} bytes; the limit is "
                                 f"{limit}", {"field": "message", "limit": limit}))
        elif not line.strip():
            continue
        else:
            reply = connection.handle_bytes(line)
        if reply:
            try:
                stdout.write(reply.encode("utf-8") + b"\n")
                stdout.flush()
            except (BrokenPipeError, OSError):
                return
        if connection.shutdown_requested:
            return
