"""The server's one shared object: a ``Memory``, the registries, the advertised capabilities.

Transports (``hippo.api.rcp.http``, ``hippo.api.rcp.stdio``) ask it for a
``Connection`` per client with the caller's ``Context`` bound in.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from hippo.access import Principal
from hippo.access.keys import KeyRing
from hippo.api.config import ServerSettings
from hippo.api.rcp import filters
from hippo.api.rcp.coalesce import CoalescingEmbedder
from hippo.api.rcp.context import Context, LiveSpaces
from hippo.api.rcp.handlers import CORE, EXTENSIONS, GRAPH_OPS, MODES
from hippo.api.rcp.memories import MemoryRegistry
from hippo.api.rcp.protocol import EXTENSION_CAPABILITY, Connection
from hippo.api.rcp.sessions import Sessions
from hippo.config import Settings
from hippo.memory import Memory
from hippo.memory.walk import MAX_HOPS
from hippo.store import Store
from hippo.version import __version__

# L1: retrieve in dense/sparse/hybrid with filters, citations, one score scale per mode, k and minScore
# honoured. L2: L1 plus a selection of SOTA surfaces; hippo's is graph (local, neighbors).
CONFORMANCE = "L2"
LIFECYCLE = ("remember", "forget", "restore", "history", "memories")


class Service:
    def __init__(self, memory: Memory, settings: ServerSettings | None = None) -> None:
        self.memory = memory
        self.settings = settings or ServerSettings()
        self.memories = MemoryRegistry(memory.store)
        self.sessions = Sessions(memory.store)
        self.live = LiveSpaces(memory)
        self.keys = KeyRing.from_settings(memory.settings, store=memory.store)
        # Extensions are advertised only when the engine has them (the lifecycle API).
        self.extensions = {name: fn for name, fn in EXTENSIONS.items()
                           if hasattr(memory, name.removeprefix("x-hippo/"))}
        self.info = {"name": "hippo", "version": __version__}
        self.capabilities = self._capabilities()

    def _capabilities(self) -> dict[str, Any]:
        s = self.settings
        caps: dict[str, Any] = {
            "retrieve": {"maxK": s.max_k, "modes": list(MODES), "defaultMode": "hybrid", "fusion": ["rrf"],
                         "mmr": False, "rerankBuiltin": False, "citations": True},
            "filter": {"fields": dict(filters.FIELDS), "operators": filters.OPERATORS,
                       "x-hippo-metaPrefix": filters.META_PREFIX},
            "citations": {},
            "graph": {"ops": list(GRAPH_OPS), "maxK": s.max_graph_k, "maxHops": MAX_HOPS},
            "index": {"writable": True, "chunking": True, "contextual": False,
                      "maxDocuments": s.max_documents,
                      "maxDocumentChars": self.memory.settings.max_document_chars},
            "memory": {"scopes": ["global", "session"], "clues": True, "maxClues": s.max_clues,
                       "maxHits": s.max_hits},
            "session": {},
        }
        if self.extensions:
            caps[EXTENSION_CAPABILITY] = {"methods": sorted(self.extensions), "version": 1}
        return caps

    @property
    def keys_required(self) -> bool:
        """A key file, keys issued into the store, or HIPPO_REQUIRE_API_KEY: callers need a key."""
        return self.memory.settings.require_api_key or self.keys.required

    def context(self, principal: Principal | None) -> Context:
        return Context(live=self.live, principal=principal)

    def connection(self, ctx: Context, **options: Any) -> Connection:
        return Connection(
            info=self.info, capabilities=self.capabilities, conformance=CONFORMANCE,
            calls={m: partial(fn, self, ctx) for m, fn in CORE.items()},
            extensions={m: partial(fn, self, ctx) for m, fn in self.extensions.items()},
            max_batch=self.settings.max_batch, **options,
        )

    def close(self) -> None:
        self.memory.close()


def open_service(store: str | Store | None = None, *, settings: Settings | None = None,
                 server_settings: ServerSettings | None = None, embedder: Any = None) -> Service:
    """Open the store and models (never downloaded) and wrap them as a server."""
    from hippo.embed import open_embedder

    settings = settings or Settings()
    server_settings = server_settings or ServerSettings()
    # A server process: requests are the parallelism, so the encoder (torch or onnxruntime) gets one
    # intra-op thread each unless told otherwise.
    inner = embedder or open_embedder(settings, threads=server_settings.torch_threads)
    if server_settings.coalesce_embeddings and not isinstance(inner, CoalescingEmbedder):
        inner = CoalescingEmbedder(inner)
    return Service(Memory.open(store, settings=settings, embedder=inner).load_models(), server_settings)
