"""Text -> named entities + (subject, predicate, object) triples."""

from hippo.extract.base import Extraction, Extractor, NamedEntity, Triple
from hippo.extract.openie import OpenIEImport
from hippo.extract.spacy import SpacyExtractor

__all__ = ["Extraction", "Extractor", "NamedEntity", "OpenIEImport", "SpacyExtractor", "Triple"]
