"""The optional LLM path: an OpenAI-compatible client, tolerant JSON reading, the prompts.

Nothing here imports ``openai`` until an ``LLMClient`` is built, and hippo
builds one only when ``settings.llm_model`` is set.
"""

from hippo.llm.client import (Completion, LLMClient, LLMConfig, LLMConfigError, LLMError, LLMRequestRefused,
                              LLMUnavailable)
from hippo.llm.jsonparse import ParseError, loads_lenient, parse_entities, parse_triples
from hippo.llm.prompts import PROMPT_VERSION
from hippo.llm.usage import Usage

__all__ = ["PROMPT_VERSION", "Completion", "LLMClient", "LLMConfig", "LLMConfigError", "LLMError",
           "LLMRequestRefused", "LLMUnavailable", "ParseError", "Usage", "loads_lenient", "parse_entities",
           "parse_triples"]
