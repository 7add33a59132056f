"""Rows of the read statements -> hippo's records (``hippo.models``)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hippo.models import DocumentRecord, Entity, Fact, Passage


def native_time(value: Any) -> datetime | str | None:
    if value is None or isinstance(value, (datetime, str)):
        return value
    to_native = getattr(value, "to_native", None)
    return to_native() if to_native else str(value)


def passage_of(r: Any) -> Passage:
    return Passage(id=r["id"], doc_id=r["doc_id"], index=r["index"], title=r["title"], text=r["text"],
                   space=r["space"], version=r["version"], forgotten_at=native_time(r["forgotten_at"]),
                   forgotten_reason=r["forgotten_reason"], created_at=native_time(r["created_at"]),
                   source=r["source"], page=r["page"], headings=list(r["headings"] or []))


def entity_of(r: Any) -> Entity:
    return Entity(id=r["id"], name=r["name"], key=r["key"], type=r["type"])


def fact_of(r: Any) -> Fact:
    return Fact(id=r["id"], subject_id=r["subject_id"], predicate=r["predicate"], object_id=r["object_id"],
                passage_id=r["passage_id"], subject=r["subject"], object=r["object"])


def document_of(r: Any) -> DocumentRecord:
    return DocumentRecord(id=r["id"], title=r["title"] or "", source=r["source"], space=r["space"],
                          version=r["version"], meta=json.loads(r["meta"] or "{}"), kind=r["kind"] or "document",
                          forgotten_at=native_time(r["forgotten_at"]), forgotten_reason=r["forgotten_reason"])


def value_id(namespace: str, key: str) -> str:
    """The id of a key-value entry: one (:Value) node per (namespace, key)."""
    return f"{namespace}\x00{key}"
