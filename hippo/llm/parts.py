"""What the settings turn on: the client and the three jobs it does, or nothing offline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hippo.config import Settings
from hippo.extract.base import Extractor
from hippo.llm.extractor import LLMExtractor, StoreExtractionCache
from hippo.llm.client import LLMClient
from hippo.llm.cluewriter import LLMClueWriter
from hippo.llm.recognition import RecognitionFilter


@dataclass
class LLMParts:
    client: LLMClient | None = None
    extractor: LLMExtractor | None = None
    fact_filter: RecognitionFilter | None = None
    clue_writer: LLMClueWriter | None = None

    def usage(self) -> dict[str, Any]:
        """Calls and tokens so far, by stage, across the jobs (for a memory's lifetime)."""
        stages: dict[str, Any] = {}
        for part in (self.extractor, self.fact_filter, self.clue_writer):
            if part is not None:
                stages.update(part.usage.since())
        return stages

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


def llm_parts(settings: Settings, *, store: Any, fallback: Extractor | None) -> LLMParts:
    """Without ``settings.llm_model``: no parts, and ``openai`` is never imported."""
    client = LLMClient.from_settings(settings)
    if client is None:
        return LLMParts()
    extractor = None
    if settings.llm_extract and fallback is not None:
        extractor = LLMExtractor(client, fallback=fallback,
                                 cache=StoreExtractionCache(store) if store is not None else None)
    return LLMParts(
        client=client, extractor=extractor,
        fact_filter=RecognitionFilter(client, keep=min(4, settings.fact_top_k) or 1) if settings.llm_filter else None,
        clue_writer=LLMClueWriter(client),
    )
