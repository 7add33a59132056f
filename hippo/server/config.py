"""The server's limits and tuning: defaults, then ``HIPPO_SERVER_*`` environment variables.

Every limit is advertised in the capabilities (``maxK``, ``maxClues``, ...)
and enforced with an error naming the field and the limit.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

Names = Annotated[list[str], NoDecode]  # from the environment: comma-separated


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HIPPO_SERVER_", extra="ignore")

    max_body_bytes: int = Field(16 * 1024 * 1024, ge=1024, description="one HTTP body or stdio line (-32013)")
    max_batch: int = Field(64, ge=1, description="requests in one JSON-RPC batch (-32602)")
    max_documents: int = Field(1_000, ge=1, description="documents in one index/add or memory/build (-32013)")
    max_k: int = Field(200, ge=1, description="retrieve maxK; larger k is clamped (spec 7.7)")
    max_graph_k: int = Field(500, ge=1, description="graph k: hits (local) or nodes (neighbors)")
    max_clues: int = Field(100, ge=1, description="memory/recall n")
    max_hits: int = Field(200, ge=1, description="memory/recall k (draft hits)")
    threads: int = Field(8, ge=1, description="engine calls served at once over HTTP")
    # Requests already run side by side; torch's intra-op threads on top of them spin against each other and
    # against every other process. Measured on 2 busy cores: a query embedding took 820 ms with torch's
    # default 2 threads and 36 ms with 1.
    torch_threads: int = Field(1, ge=1, description="encoder intra-op threads in a server process (torch or "
                                                   "onnxruntime; the name is older than the ONNX backend)")
    # Off by default: at 10k passages on 2 busy cores it served 5.0 recalls/s against 8.3 one at a time (every
    # recall in a batch waits for it, where one-at-a-time lets the others run their seed and PPR stages).
    coalesce_embeddings: bool = Field(False, description="embed concurrent queries as one batch")

    # Who may reach an HTTP server (hippo.server.guard); the same settings serve `hippo mcp --http`.
    allowed_hosts: Names = Field(default_factory=list, description="Host names besides loopback (421 otherwise); "
                                                                   "'*' for any")
    allowed_origins: Names = Field(default_factory=list, description="browser Origins allowed, with CORS "
                                                                     "(403 otherwise); none by default")

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value
