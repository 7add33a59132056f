"""Clue-guided retrieval over RCP with the protocol's own SDK (``pip install rcp-protocol``).

Builds a memory over hippo's sample corpus, recalls clues for a question,
fans each clue out (surrogate queries over ``retrieve``, seed ids over
``graph``) inside one session so no passage comes back twice, and prints
every clue beside the passages it found.

    python examples/rcp_client.py                                  # spawns `hippo serve --stdio` on a temp store
    python examples/rcp_client.py --url http://127.0.0.1:8765/rcp  # or a running `hippo serve --http`
    python examples/rcp_client.py "Who designed the lighthouse on Lanthorn Isle?"
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import rcp

CORPUS = Path(__file__).resolve().parent.parent / "datasets" / "sample" / "corpus.json"
QUESTION = "Who governs the island on which the painter Greta Südhof was born?"


def connect(url: str | None, store: str) -> rcp.Client:
    if url:
        return rcp.connect_http(url)
    return rcp.connect_stdio([sys.executable, "-m", "hippo.cli", "serve", "--stdio", "--store", store])


def short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--url", help="an HTTP RCP endpoint; default: spawn hippo over stdio")
    parser.add_argument("--per-clue", type=int, default=2, help="passages fetched per clue")
    args = parser.parse_args()

    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    documents = [{"id": f"sample-{i:02d}", "title": doc["title"], "text": doc["text"]} for i, doc in enumerate(corpus)]
    with tempfile.TemporaryDirectory() as folder:
        client = connect(args.url, str(Path(folder) / "example.db"))
        try:
            print(f"server {client.server['name']} {client.server['version']}, "
                  f"capabilities: {', '.join(sorted(client.capabilities))}")
            memory = client.memory_build(documents=documents, scope="global")
            print(f"built {memory['memoryId']}: {len(documents)} documents, {memory['tokens']} tokens of "
                  f"entities and facts")
            session = client.memory_build(scope="session")["sessionId"]  # dedup across the fan-out

            # memory_recall(query, memory_id, session_id, n) plus hippo's k: draft hits kept (the rest stay
            # unseen, so the fan-out can still find them).
            recalled = client.call("memory/recall", {"query": args.question, "memoryId": memory["memoryId"],
                                                     "sessionId": session, "n": 5, "k": 3})
            print(f"\n{args.question}\nrecall ({recalled['_meta']['strategy']}): {len(recalled['clues'])} clues, "
                  f"{len(recalled['hits'])} draft hits")
            evidence: list[tuple[str, dict]] = [("recall", h) for h in recalled["hits"]]
            for number, clue in enumerate(recalled["clues"], 1):
                if clue.get("seedIds"):  # graph entry points: a walk from them
                    found = client.graph("local", {"seedIds": clue["seedIds"], "k": args.per_clue,
                                                   "sessionId": session})["hits"]
                    how = f"graph local from {len(clue['seedIds'])} seed(s)"
                else:  # a surrogate query
                    found = client.retrieve(clue["query"], k=args.per_clue, opts={"sessionId": session})
                    how = "retrieve"
                print(f"\n  clue {number} (weight {clue.get('weight', 0):.2f}): {clue.get('query', '')!r} -> {how}")
                for hit in found:
                    print(f"    {hit['meta']['title']:<28} {short(hit['text'])}")
                evidence += [(f"clue {number}", hit) for hit in found]

            print(f"\nevidence for the answer ({len(evidence)} passages, none twice):")
            for source, hit in evidence:
                print(f"  [{source:>7}] {hit['meta']['title']:<28} {short(hit['text'], 70)}")
        finally:
            client.shutdown()


if __name__ == "__main__":
    main()
