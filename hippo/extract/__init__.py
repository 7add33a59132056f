"""Text -> named entities + (subject, predicate, object) triples, offline (spaCy, OpenIE imports).

The LLM extractor builds on ``Extractor`` from above: ``hippo.llm.extractor``."""

from hippo.extract.base import Extraction, Extractor, NamedEntity, Triple
from hippo.extract.openie import OpenIEImport
from hippo.extract.spacy import SpacyExtractor

__all__ = ["Extraction", "Extractor", "NamedEntity", "OpenIEImport", "SpacyExtractor", "Triple"]
