"""Documents as people have them: files and folders in, documents with sections and pages out.

- ``read_paths`` / ``read_file``: PDF, HTML, DOCX, PPTX (the ``documents``
  extra, markitdown), Markdown, text and JSON/JSONL corpora;
- ``split_document``: passages split on headings and pages before the size
  limit, each with its page and heading path (used by every ``Memory.index``).
"""

from hippo.documents.convert import MissingExtra, UnreadableFile, convert_file
from hippo.documents.files import SUPPORTED, FileError, Reading, expand_paths, read_file, read_paths
from hippo.documents.sections import Chunk, split_document

__all__ = ["SUPPORTED", "Chunk", "FileError", "MissingExtra", "Reading", "UnreadableFile", "convert_file",
           "expand_paths", "read_file", "read_paths", "split_document"]
