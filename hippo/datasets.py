"""Loaders for the corpus + question formats hippo is measured on.

- ``[{"title", "text"}]`` corpora (HippoRAG ``*_corpus.json``, hippo's sample);
- MuSiQue-style questions with ``paragraphs[].is_supporting`` (and HippoRAG
  case studies, whose ``paragraphs`` may be a Python-repr string);
- HotpotQA questions with ``supporting_facts`` and a ``title -> [sentences]`` corpus;
- hippo's own ``questions.json`` with ``gold_titles``.

A benchmark set is a folder holding one corpus file and one question file.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippo.errors import InvalidInput
from hippo.ids import document_id
from hippo.models import Document

SAMPLE = Path(__file__).resolve().parent.parent / "datasets" / "sample"


@dataclass
class Question:
    id: str
    question: str
    gold_titles: list[str]
    answer: str = ""
    type: str = ""
    # Gold passage texts where the format gives them: titles repeat in MuSiQue.
    gold_texts: list[str | None] = field(default_factory=list)


@dataclass
class Dataset:
    name: str
    documents: list[Document]
    questions: list[Question]
    openie_file: Path | None = None
    path: Path | None = field(default=None, repr=False)

    def gold_document_ids(self, question: Question) -> set[str]:
        """Ids of the documents that answer a question (by title, and text where known)."""
        by_title: dict[str, list[Document]] = {}
        for doc in self.documents:
            by_title.setdefault(doc.title, []).append(doc)
        gold: set[str] = set()
        texts = question.gold_texts or [None] * len(question.gold_titles)
        for title, text in zip(question.gold_titles, texts, strict=True):
            candidates = by_title.get(title, [])
            if text is not None:
                candidates = [d for d in candidates if _squash(d.text) == _squash(text)] or candidates
            gold.update(d.id or document_id(d.title, d.text) for d in candidates)
        return gold


def _squash(text: str) -> str:
    return " ".join(text.split())


def datasets_root() -> Path:
    """``$HIPPO_DATASETS``, else ``../shared/datasets`` beside the project."""
    env = os.environ.get("HIPPO_DATASETS")
    return Path(env) if env else Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"


def read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))  # tolerates bare NaN
    except FileNotFoundError as exc:
        raise InvalidInput("path", f"{path} does not exist") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput("path", f"{path} is not valid UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInput("path", f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                                   f"column {exc.colno}") from exc


def corpus_documents(data: Any, source: str = "") -> list[Document]:
    """A corpus in any supported shape -> documents (ids derived from title and text)."""
    if isinstance(data, dict):  # HotpotQA: title -> sentences
        return [Document(title=t, text="".join(s) if isinstance(s, list) else str(s), source=source)
                for t, s in data.items()]
    if not isinstance(data, list):
        raise InvalidInput("corpus", "must be a JSON list of {title, text} objects or a title -> text object")
    documents = []
    for i, item in enumerate(data):
        if isinstance(item, str):
            documents.append(Document(text=item, source=source))
        elif isinstance(item, dict) and isinstance(item.get("text", item.get("paragraph_text")), str):
            text = item.get("text", item.get("paragraph_text"))
            documents.append(Document(id=item.get("id"), title=str(item.get("title") or ""), text=text,
                                      source=source))
        else:
            raise InvalidInput(f"corpus[{i}]", "needs a string 'text' field")
    return documents


def _paragraphs(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, str):  # case studies store a Python repr
        raw = ast.literal_eval(raw)
    return list(raw)


def parse_questions(data: list[dict[str, Any]]) -> list[Question]:
    questions = []
    for i, item in enumerate(data):
        qid = str(item.get("id") or item.get("_id") or i)
        texts: list[str | None] = []
        if "gold_titles" in item:
            gold = list(item["gold_titles"])
            kind = f"{item.get('hops')}hop" if item.get("hops") else ""
        elif "supporting_facts" in item:
            gold = list(dict.fromkeys(title for title, _ in item["supporting_facts"]))
            kind = item.get("type", "")
        elif "paragraphs" in item:
            supporting = [p for p in _paragraphs(item["paragraphs"]) if p.get("is_supporting") in (True, "True", 1)]
            gold = [p["title"] for p in supporting]
            texts = [p.get("paragraph_text", p.get("text")) for p in supporting]
            # MuSiQue ids carry the hop type ("2hop__..."); 2Wiki names it ("compositional", ...).
            kind = str(item.get("question_type") or (qid.split("__")[0] if "__" in qid else ""))
        else:
            raise InvalidInput(f"questions[{i}]", "has no gold_titles, supporting_facts or paragraphs")
        answer = item.get("answer", "")
        questions.append(Question(id=qid, question=item["question"], gold_titles=gold,
                                  answer=answer if isinstance(answer, str) else ", ".join(answer), type=kind,
                                  gold_texts=texts))
    return questions


def load_dataset(path: str | Path) -> Dataset:
    """A folder with ``*corpus*.json`` and a question file, or a hippo sample folder."""
    folder = Path(path)
    if not folder.is_dir():
        candidate = datasets_root() / str(path)
        if not candidate.is_dir():
            raise InvalidInput("dataset", f"{path} is not a folder (looked in . and {datasets_root()})")
        folder = candidate
    files = sorted(folder.glob("*.json"))
    corpus_files = [f for f in files if "corpus" in f.stem]
    openie = [f for f in files if f.stem.startswith("openie")]
    question_files = [f for f in files if f not in corpus_files and f not in openie]
    if len(corpus_files) != 1 or len(question_files) != 1:
        raise InvalidInput("dataset", f"{folder} needs exactly one *corpus*.json and one question file, "
                                      f"found {[f.name for f in files]}")
    documents = corpus_documents(read_json(corpus_files[0]), source=corpus_files[0].name)
    questions = parse_questions(read_json(question_files[0]))
    return Dataset(name=folder.name, documents=documents, questions=questions,
                   openie_file=openie[0] if openie else None, path=folder)
