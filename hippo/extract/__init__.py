"""Text -> named entities + (subject, predicate, object) triples."""

from hippo.extract.base import Extraction, Extractor, NamedEntity, Triple
from hippo.extract.llm import LLMExtractor, StoreExtractionCache  # imports openai only when a client is built
from hippo.extract.openie import OpenIEImport
from hippo.extract.spacy import SpacyExtractor

__all__ = ["Extraction", "Extractor", "LLMExtractor", "NamedEntity", "OpenIEImport", "SpacyExtractor",
           "StoreExtractionCache", "Triple"]
