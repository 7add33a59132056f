"""One OpenAI-compatible chat endpoint: OpenAI, Azure, vLLM, Ollama, llama.cpp server.

The ``openai`` package is imported when a client is built, never before, so
the offline path does not need it installed. Retries are ours (the package's
own are switched off) so each one is counted and backs off the same way
everywhere: exponential with jitter, or the server's ``Retry-After``.

Structured output, by level:

- ``schema``: ``{"type": "json_schema", ...}`` with ``strict`` (OpenAI, vLLM,
  llama.cpp's own server), the schema without the keywords strict mode may refuse;
- ``grammar``: ``{"type": "json_object", "schema": ...}``, the whole schema, which
  llama.cpp's servers compile into a decoding grammar (llama-cpp-python knows
  no ``json_schema`` type);
- ``object``: ``{"type": "json_object"}``; ``off``: no ``response_format``.

``json_mode="auto"`` asks for ``schema`` first and, when the endpoint refuses
a ``response_format`` (400/422, or a 500 whose message names it, as
llama-cpp-python's server sends), steps down to ``object`` and then ``off``,
keeping the level that worked for later calls. ``grammar`` is never reached
by stepping down, only by pinning it: measured with Gemma 3 270M on
llama-cpp-python, the grammar turned answers that plainly failed (pairs and
entity lists, so the passage fell back to spaCy) into triples in shape only
(entity trios, one repeated until the list bound), at 3-5x the seconds per
call. A capable model on llama.cpp is what it is for.

The tolerant parser (``hippo.llm.jsonparse``) reads whatever comes back.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from hippo.config import Settings
from hippo.errors import HippoError
from hippo.llm.prompts import Messages, Schema
from hippo.llm.usage import Usage

JsonMode = Literal["auto", "schema", "grammar", "object", "off"]
_LEVELS = ("schema", "grammar", "object", "off")
_STEPS = ("schema", "object", "off")  # what auto tries, in order
# Keywords OpenAI's strict mode has refused in some models and that only bound sizes; the grammar level keeps them.
_NOT_STRICT = frozenset({"minItems", "maxItems"})
_RETRY_STATUS = {408, 409, 429}
T = TypeVar("T")
R = TypeVar("R")


class LLMError(HippoError):
    """A call to the model failed; the caller decides whether to fall back."""


class LLMUnavailable(LLMError):
    """Rate limits, server errors or timeouts outlasted every retry."""


class LLMRequestRefused(LLMError):
    """The endpoint refused this request (4xx other than auth): e.g. a passage over its context."""


class LLMConfigError(LLMError):
    """The endpoint refused the configuration itself (key, model): every call would fail the same way.
    The message names the setting to fix."""


@dataclass(frozen=True)
class LLMConfig:
    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    concurrency: int = 4
    max_retries: int = 4
    json_mode: JsonMode = "auto"
    max_tokens: int = 2048

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMConfig | None:
        """None when no model is configured: hippo runs offline."""
        if not settings.llm_model:
            return None
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return cls(model=settings.llm_model, base_url=settings.llm_base_url, api_key=key,
                   timeout=settings.llm_timeout, concurrency=settings.llm_concurrency,
                   max_retries=settings.llm_max_retries, json_mode=settings.llm_json_mode,
                   max_tokens=settings.llm_max_tokens)


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class LLMClient:
    """Chat completions with retries, a json-mode ladder and a bounded worker pool."""

    def __init__(self, config: LLMConfig, *, backoff: float = 0.5, max_backoff: float = 20.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        import openai  # only here: the offline path never imports it

        self.config = config
        self._openai = openai
        base_url = config.base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = config.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if not base_url:
                raise LLMConfigError("llm_api_key: no API key for OpenAI (set HIPPO_LLM_API_KEY or "
                                     "OPENAI_API_KEY), or set llm_base_url to a local server")
            api_key = "not-needed"  # vLLM, Ollama and llama.cpp accept any key
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=config.timeout, max_retries=0)
        self.base_url = str(self._client.base_url)
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._sleep = sleep
        self._lock = threading.Lock()
        mode = config.json_mode
        self._level = "schema" if mode == "auto" else mode
        # Reasoning models (OpenAI o-series, gpt-5) refuse ``max_tokens`` and any temperature but 1;
        # a refusal naming either switches it off for this client.
        self._token_param = "max_tokens"
        self._temperature: float | None = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient | None:
        config = LLMConfig.from_settings(settings)
        return cls(config) if config else None

    @property
    def name(self) -> str:
        return self.config.model

    @property
    def json_level(self) -> str:
        """The response_format level in use: ``schema``, ``grammar``, ``object`` or ``off``."""
        return self._level

    def close(self) -> None:
        self._client.close()

    # -- one call ------------------------------------------------------------------------

    def complete(self, stage: str, messages: Messages, *, schema: Schema | None = None,
                 usage: Usage | None = None, max_tokens: int | None = None) -> Completion:
        """One chat completion at temperature 0, retried on transient failures.

        Raises ``LLMUnavailable`` when retries run out, ``LLMConfigError`` for a
        key or model the endpoint refuses, ``LLMRequestRefused`` otherwise.
        """
        usage = usage or Usage()
        level = self._level
        while True:
            try:
                completion = self._with_retries(stage, messages, self._format(level, schema), usage,
                                                max_tokens or self.config.max_tokens)
            except LLMRequestRefused as exc:
                if self._adapt(str(exc)):
                    continue
                lower = self._step_down(level, schema)
                if lower is None:
                    raise
                usage.add(stage, format_downgrades=1)
                level = lower
                continue
            if level != self._level:
                with self._lock:  # the endpoint accepted a lower level: use it from now on
                    if _LEVELS.index(level) > _LEVELS.index(self._level):
                        self._level = level
            usage.add(stage, calls=1, prompt_tokens=completion.prompt_tokens,
                      completion_tokens=completion.completion_tokens, truncated=int(completion.truncated))
            return completion

    def _adapt(self, refusal: str) -> bool:
        """Change a parameter the endpoint named as unsupported; True when something changed."""
        with self._lock:
            if "max_tokens" in refusal and self._token_param == "max_tokens":
                self._token_param = "max_completion_tokens"
                return True
            if "temperature" in refusal and self._temperature is not None:
                self._temperature = None
                return True
        return False

    def _step_down(self, level: str, schema: Schema | None) -> str | None:
        """The next level auto tries that sends something else (without a schema, schema and object
        send the same)."""
        refused = self._format(level, schema)
        if self.config.json_mode != "auto" or refused is None:
            return None
        for lower in _STEPS[_STEPS.index(level) + 1:]:
            if self._format(lower, schema) != refused:
                return lower
        return None

    @staticmethod
    def _format(level: str, schema: Schema | None) -> dict[str, Any] | None:
        if level == "schema" and schema is not None:
            name, body = schema
            return {"type": "json_schema", "json_schema": {"name": name, "schema": _strict(body), "strict": True}}
        if level == "grammar" and schema is not None:
            return {"type": "json_object", "schema": schema[1]}
        if level in ("schema", "grammar", "object"):
            return {"type": "json_object"}
        return None

    def _with_retries(self, stage: str, messages: Messages, response_format: dict[str, Any] | None,
                      usage: Usage, max_tokens: int) -> Completion:
        openai = self._openai
        attempt = 0
        while True:
            try:
                kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                          self._token_param: max_tokens}
                if self._temperature is not None:
                    kwargs["temperature"] = self._temperature
                if response_format is not None:
                    kwargs["response_format"] = response_format
                response = self._client.chat.completions.create(**kwargs)
                return _completion(response)
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status in (401, 403):
                    raise LLMConfigError(f"llm_api_key: {self.base_url} refused the key ({status}: "
                                         f"{_message(exc)})") from exc
                if status == 404:
                    raise LLMConfigError(f"llm_model: {self.base_url} has no model {self.config.model!r} "
                                         f"or no chat endpoint (404: {_message(exc)})") from exc
                if status not in _RETRY_STATUS and (status < 500 or _refuses_format(exc, response_format)):
                    raise LLMRequestRefused(f"{stage}: {self.base_url} refused the request "
                                            f"({status}: {_message(exc)})") from exc
                wait = _retry_after(exc)
                failure: Exception = exc
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                wait, failure = None, exc
            if attempt >= self.config.max_retries:
                usage.add(stage, failures=1)
                raise LLMUnavailable(f"{stage}: {self.base_url} failed {attempt + 1} times; last: "
                                     f"{type(failure).__name__}: {failure}") from failure
            usage.add(stage, retries=1)
            delay = wait if wait is not None else min(self._max_backoff, self._backoff * 2 ** attempt)
            self._sleep(delay * (1 + 0.25 * random.random()) if wait is None else delay)
            attempt += 1

    # -- many calls ----------------------------------------------------------------------

    def map(self, work: Callable[[T], R], items: Sequence[T]) -> list[R | BaseException]:
        """``work`` on every item, at most ``concurrency`` at once; each result or the exception it
        raised, in order. One failing item never costs the others."""
        if not items:
            return []

        def guarded(item: T) -> R | BaseException:
            try:
                return work(item)
            except Exception as exc:  # returned, not raised: the caller sorts failures per item
                return exc

        workers = min(self.config.concurrency, len(items))
        if workers == 1:
            return [guarded(item) for item in items]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hippo-llm") as pool:
            return list(pool.map(guarded, items))


def _strict(body: Any) -> Any:
    """The schema without ``_NOT_STRICT`` keywords, at every depth."""
    if isinstance(body, dict):
        return {key: _strict(value) for key, value in body.items() if key not in _NOT_STRICT}
    if isinstance(body, list):
        return [_strict(value) for value in body]
    return body


def _completion(response: Any) -> Completion:
    choice = response.choices[0] if getattr(response, "choices", None) else None
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None) or ""
    # Reasoning servers may put the answer's preamble in a separate field; only content is the answer.
    usage = getattr(response, "usage", None)
    return Completion(text=text, finish_reason=getattr(choice, "finish_reason", None),
                      prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                      completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0))


def _refuses_format(exc: Any, response_format: dict[str, Any] | None) -> bool:
    """A server error that is really a refusal of ``response_format``: llama-cpp-python's server
    answers a ``json_schema`` it cannot validate with HTTP 500 and a message naming the field.
    Retrying it only burns the retries; stepping down the json-mode ladder works."""
    if response_format is None:
        return False
    text = f"{_message(exc)} {getattr(exc, 'body', '')}".casefold()
    return "response_format" in text or "json_schema" in text


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:200]
        if isinstance(error, str):
            return error[:200]
    return str(getattr(exc, "message", exc))[:200]


def _retry_after(exc: Any) -> float | None:
    """The server's ``Retry-After`` in seconds (capped at a minute), if it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for name in ("retry-after-ms", "retry-after"):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw) / (1000 if name.endswith("ms") else 1)
        except ValueError:
            continue
        return max(0.0, min(seconds, 60.0))
    return None
