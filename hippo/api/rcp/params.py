"""The params of each method, as pydantic models: the first bad field is the error.

Strict types (the spec: integers are numbers, booleans are true/false, never
strings), unknown fields ignored (forward compatibility), camelCase on the
wire. Count ranges below 1 are the SDK's check; upper limits are the
server's, advertised in its capabilities.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

Scope = Literal["global", "session"]


class Params(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", alias_generator=to_camel, populate_by_name=True,
                              frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        # Spec 4.6: an explicit null where the schema has none means "absent".
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


class QueryParams(Params):
    query: str = Field(min_length=1)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is blank")
        return value


class InputDocument(Params):
    id: str | None = Field(None, min_length=1, max_length=512)
    text: str
    title: str = ""
    source: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class RetrieveParams(QueryParams):
    k: int = 10
    mode: str = "hybrid"
    filter: dict[str, Any] | None = None
    min_score: float | None = Field(None, allow_inf_nan=False)
    session_id: str | None = None
    token_budget: int | None = None
    strict: bool = True
    include_text: bool = True
    fusion: dict[str, Any] | None = None
    candidate_k: int | None = None


class GraphParams(Params):
    op: str
    query: str | None = Field(None, min_length=1)
    seed_ids: list[str] = Field(default_factory=list, max_length=1000)
    k: int = 10
    hops: int = 1
    session_id: str | None = None
    token_budget: int | None = None


class IndexAddParams(Params):
    documents: list[InputDocument]
    chunk: bool | None = None
    contextual: bool | None = None


class IndexDeleteParams(Params):
    ids: list[str]


class MemoryBuildParams(Params):
    documents: list[InputDocument] | None = None
    memory_id: str | None = Field(None, min_length=1)
    scope: Scope | None = None
    session_id: str | None = Field(None, min_length=1)


class MemoryRecallParams(QueryParams):
    memory_id: str | None = Field(None, min_length=1)
    session_id: str | None = Field(None, min_length=1)
    n: int = 5
    k: int = 10
    token_budget: int | None = None


class RememberParams(Params):
    text: str
    custom_id: str | None = None
    label: str | None = None
    space: str = "org"
    on_near_duplicate: Literal["reuse", "create"] = "reuse"
    props: dict[str, Any] | None = None
    confidence: float | None = Field(None, allow_inf_nan=False)
    salience: float | None = Field(None, allow_inf_nan=False)
    agent_id: str | None = None


class ForgetParams(Params):
    uid: str | None = None
    custom_id: str | None = None
    space: str = "org"
    dry_run: bool = False
    cascade: bool = True
    reason: str | None = None


class RestoreParams(Params):
    uid: str


class HistoryParams(Params):
    custom_id: str | None = None
    uid: str | None = None
    space: str = "org"


class MemoriesParams(Params):
    spaces: list[str] | None = None
    live: bool = True
    limit: int = 100
