"""What an extractor returns for one passage, and the protocol extractors follow."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from hippo.models import Passage


class Triple(BaseModel):
    subject: str
    predicate: str
    object: str


class NamedEntity(BaseModel):
    name: str
    type: str = "concept"


class Extraction(BaseModel):
    """Named entities and (subject, predicate, object) triples of one passage."""

    entities: list[NamedEntity] = Field(default_factory=list)
    triples: list[Triple] = Field(default_factory=list)


@runtime_checkable
class Extractor(Protocol):
    name: str

    def extract(self, passages: list[Passage]) -> list[Extraction]:
        """One extraction per passage, in order."""
