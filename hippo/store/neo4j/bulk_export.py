"""A hippo SQLite store -> the CSV files ``neo4j-admin database import full`` reads.

The files hold the graph exactly as the batch writer (``writer``) would have written it:
the same labels, relationship types, properties and ``seq`` order (SQLite's rowid order), the
vectors on (:Vector) nodes labelled by the kinds of record that use them. What is not bulk
data -- the (:Meta) node and the key-value area -- is written over Bolt after the import
(``bulk``). Values are quoted so that an empty string stays an empty string and a missing
value (SQL NULL) becomes no property, as ``SET n = $props`` does with a null.

Vectors are most of the bytes: each is written twice, as signed bytes (``vector``, what hippo
loads) and as float32 numbers (``embedding``, what the vector indexes read), formatted by a
pool of worker processes, one part file per chunk.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hippo.errors import StoreError
from hippo.models import Passage
from hippo.store.base import DERIVED_NAMESPACE
from hippo.store.neo4j.writer import passage_name, passage_words
from hippo.store.sqlite_embedding import stored_format, unblob

ARRAY = "\x1f"  # the array delimiter (U+001F): no heading or vector text contains it
VECTOR_CHUNK = 20_000
Progress = Callable[[str, int, int], None]

_SIGNED = [str(b - 256 if b > 127 else b) for b in range(256)]


@dataclass
class CsvExport:
    """What was written where: ``neo4j-admin`` arguments, counts, and what goes over Bolt."""

    directory: Path
    nodes: dict[str, list[Path]] = field(default_factory=dict)  # label(s) -> header + parts
    relationships: dict[str, list[Path]] = field(default_factory=dict)
    multiline: list[Path] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    values: list[dict[str, str]] = field(default_factory=list)

    @property
    def relationship_count(self) -> int:
        return sum(self.counts.get(k, 0) for k in ("has_passage", "mentions", "facts", "synonyms"))

    def admin_arguments(self) -> list[str]:
        args = [f"--nodes={label}={','.join(map(str, files))}" for label, files in self.nodes.items()]
        args += [f"--relationships={kind}={','.join(map(str, files))}" for kind, files in self.relationships.items()]
        args += ["--array-delimiter=U+001F", "--id-type=string"]
        if self.multiline:
            # v1 (one switch for all files): the v2 chunker, which takes a list of files, fails on files
            # larger than its 4 MiB read buffer ("Weird input data, found CR outside a text cell", 5.26.30)
            args += ["--multiline-fields=true"]
        return args


def text(value: Any) -> str:
    """A CSV field: a quoted string (so "" is an empty string), or nothing for a missing value."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace('"', '""') + '"'


def line(*values: Any) -> str:
    return ",".join(map(text, values)) + "\n"


def open_source(path: Path) -> sqlite3.Connection:
    """The SQLite store, read-only; without a write-ahead log beside it, opened immutable so that
    not even a ``-shm`` file is created next to it."""
    if not path.is_file():
        raise StoreError(f"no SQLite hippo store at {path}")
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() and wal.stat().st_size else "immutable=1"
    db = sqlite3.connect(f"file:{path}?{mode}", uri=True)
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a SQLite hippo store: {exc}") from None
    missing = {"meta", "documents", "passages", "entities", "facts", "mentions", "synonyms", "vectors"} - tables
    if missing:
        raise StoreError(f"{path} is not a hippo store (no table {min(missing)})")
    return db


def read_meta(db: sqlite3.Connection, source: Path) -> dict[str, Any]:
    meta = dict(db.execute("SELECT key, value FROM meta"))
    if db.execute("SELECT 1 FROM vectors_staged LIMIT 1").fetchone():
        raise StoreError(f"{source} has a re-embedding in progress (staged vectors); finish it with "
                         "'hippo reembed' before a bulk import")
    dim = meta.get("embedding_dim")
    return {"revision": int(meta.get("revision") or 0), "schema_version": meta.get("schema_version"),
            "embedding_model": meta.get("embedding_model"), "embedding_dim": int(dim) if dim else None,
            "embedding_backend": meta.get("embedding_backend")}


def export_csv(source: Path, directory: Path, *, workers: int = 2, progress: Progress | None = None) -> CsvExport:
    """Write ``source`` (a hippo SQLite store) as import CSVs into ``directory`` (created)."""
    directory.mkdir(parents=True, exist_ok=True)
    db = open_source(source)
    try:
        out = CsvExport(directory, meta=read_meta(db, source))
        # not the source's id (``DERIVED_NAMESPACE``): the imported database is another store
        out.values = [{"namespace": ns, "key": k, "value": v}
                      for ns, k, v in db.execute("SELECT namespace, key, value FROM kv WHERE namespace != ? "
                                                 "ORDER BY namespace, key", (DERIVED_NAMESPACE,))]
        seq = _write_records(db, out)
        out.meta["seq"] = seq
        _write_vectors(db, out, workers, progress)
    finally:
        db.close()
    return out


def _write_file(out: CsvExport, name: str, header: str, rows: Iterator[str], *, multiline: bool = False) -> int:
    path = out.directory / f"{name}.csv"
    count = 0
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(header + "\n")
        for count, row in enumerate(rows, 1):
            f.write(row)
    if multiline:
        out.multiline.append(path)
    out.counts[name] = count
    return count


def _write_records(db: sqlite3.Connection, out: CsvExport) -> int:
    """Documents, passages, entities and their relationships; returns the next ``seq``."""
    seq = 0

    def numbered(query: str, make: Callable[..., str]) -> Iterator[str]:
        nonlocal seq
        for row in db.execute(query):
            yield make(seq, *row)
            seq += 1

    out.nodes["Document"] = [out.directory / "documents.csv"]
    _write_file(out, "documents", "id:ID(Document),title,name,source,space,version:long,meta,kind,"
                "forgotten_at:datetime,forgotten_reason,seq:long", numbered(
        "SELECT id, title, source, space, version, meta, kind, forgotten_at, forgotten_reason FROM documents "
        "ORDER BY rowid",
        lambda s, id_, title, src, space, version, meta, kind, gone, why: line(
            id_, title, title or id_, src, space, version, meta, kind, gone, why, s)), multiline=True)

    def passage(s: int, id_: str, doc_id: str, index: int, title: str, body: str, space: str, version: int,
                embed: str, src: str | None, page: int | None, headings: str | None, created: str,
                gone: str | None, why: str | None) -> str:
        heads = json.loads(headings) if headings else []
        if any(ARRAY in h for h in heads):
            raise StoreError(f"passage {id_} has a heading with the character U+001F, which the bulk import "
                             "uses between list elements; write this store with 'hippo index --store' instead")
        record = Passage(id=id_, doc_id=doc_id, index=index, title=title, text=body, space=space)
        return line(id_, doc_id, index, title, body, passage_name(record), *passage_words(record).values(), space,
                    version, embed, src, page, ARRAY.join(heads) if heads else None, s, created, gone, why)

    out.nodes["Passage"] = [out.directory / "passages.csv"]
    _write_file(out, "passages", "id:ID(Passage),doc_id,index:long,title,text,name,words,word_count:long,space,"
                "version:long,embed_hash,source,page:long,headings:string[],seq:long,created_at:datetime,forgotten_at:datetime,"
                "forgotten_reason", numbered(
        "SELECT id, doc_id, idx, title, text, space, version, embed_hash, source, page, headings, created_at, "
        "forgotten_at, forgotten_reason FROM passages ORDER BY rowid", passage), multiline=True)
    out.nodes["Entity"] = [out.directory / "entities.csv"]
    _write_file(out, "entities", "id:ID(Entity),name,key,type,embed_hash,seq:long", numbered(
        "SELECT id, name, key, type, embed_hash FROM entities ORDER BY rowid",
        lambda s, *row: line(*row, s)), multiline=True)

    out.relationships["HAS_PASSAGE"] = [out.directory / "has_passage.csv"]
    _write_file(out, "has_passage", ":START_ID(Document),:END_ID(Passage)",
                (line(d, p) for p, d in db.execute("SELECT id, doc_id FROM passages ORDER BY rowid")))
    out.relationships["MENTIONS"] = [out.directory / "mentions.csv"]
    _write_file(out, "mentions", ":START_ID(Passage),:END_ID(Entity)",
                (line(p, e) for p, e in db.execute("SELECT passage_id, entity_id FROM mentions")))
    out.relationships["RELATES"] = [out.directory / "facts.csv"]
    _write_file(out, "facts", ":START_ID(Entity),:END_ID(Entity),id,predicate,passage_id,subject_id,object_id,"
                "subject,object,embed_hash,seq:long", numbered(
        "SELECT id, subject_id, object_id, predicate, passage_id, subject, object, embed_hash FROM facts "
        "ORDER BY rowid",
        lambda s, id_, sub, obj, pred, pid, subject, object_, embed: line(
            sub, obj, id_, pred, pid, sub, obj, subject, object_, embed, s)), multiline=True)
    out.relationships["SYNONYM"] = [out.directory / "synonyms.csv"]
    _write_file(out, "synonyms", ":START_ID(Entity),:END_ID(Entity),score:double",
                (line(a, b, float(s)) for a, b, s in db.execute("SELECT a, b, score FROM synonyms")))
    return seq


def _kind_hashes(db: sqlite3.Connection) -> dict[str, set[str]]:
    """The text hashes each kind of record uses (a vector carries the label of each kind)."""
    return {label: {h for (h,) in db.execute(f"SELECT DISTINCT embed_hash FROM {table}")}
            for label, table in (("PassageVector", "passages"), ("EntityVector", "entities"),
                                 ("FactVector", "facts"))}


def _write_vectors(db: sqlite3.Connection, out: CsvExport, workers: int, progress: Progress | None) -> None:
    header = out.directory / "vectors.header.csv"
    header.write_text(":LABEL,hash:ID(Vector),dim:long,vector:byte[],embedding:float[]\n", encoding="utf-8")
    out.nodes["Vector"] = [header]
    kinds = _kind_hashes(db)
    total = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    kept = stored_format(db)
    done = 0
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        pending = []
        for part, rows in enumerate(_vector_chunks(db, kept.itemsize)):
            labels = [ARRAY.join(k for k, used in kinds.items() if h in used) for h, _ in rows]
            path = out.directory / f"vectors.{part:05d}.csv"
            out.nodes["Vector"].append(path)
            floats = unblob(b"".join(v for _, v in rows), kept).tobytes()  # float16 stores: widened here
            pending.append(pool.submit(format_vectors, path, [h for h, _ in rows], labels, floats))
            while len(pending) > max(1, workers) * 2 or (pending and pending[0].done()):
                done += pending.pop(0).result()
                if progress:
                    progress("vectors", done, total)
        for job in pending:
            done += job.result()
            if progress:
                progress("vectors", done, total)
    out.counts["vectors"] = done


def _vector_chunks(db: sqlite3.Connection, width: int) -> Iterator[list[tuple[str, bytes]]]:
    cursor = db.execute("SELECT hash, vector FROM vectors ORDER BY hash")  # WITHOUT ROWID in newer stores
    while rows := cursor.fetchmany(VECTOR_CHUNK):
        dims = {len(v) for _, v in rows}
        if len(dims) != 1 or next(iter(dims)) % width:
            raise StoreError("the store's vectors do not all have one dimension; re-embed it before a bulk import")
        yield rows


def format_vectors(path: Path, hashes: list[str], labels: list[str], blob: bytes) -> int:
    """One part file of (:Vector) rows (runs in a worker process). Both lists are formatted by numpy,
    not number by number: ``vector`` from a table of the 256 byte texts, ``embedding`` as fixed-point
    decimals with 12 places (unit vectors: every component is within 5e-13 of its float32, and
    exactly it above 1e-4; a matrix with a component outside (-10, 10) is printed with ``%.9g``)."""
    matrix = np.frombuffer(blob, dtype="<f4").reshape(len(hashes), -1)
    dim = matrix.shape[1]
    byte_rows = _byte_texts(matrix.view(np.uint8))
    float_rows = _float_texts(matrix)
    with path.open("wb") as f:
        for h, label, as_bytes, as_floats in zip(hashes, labels, byte_rows, float_rows, strict=True):
            f.write(b"".join((label.encode(), b',"', h.encode(), b'",', str(dim).encode(), b',"', as_bytes,
                              b'","', as_floats, b'"\n')))
    return len(hashes)


def _byte_texts(data: np.ndarray) -> list[bytes]:
    """Each row of signed bytes as "b0<US>b1<US>...": table lookups, then the padding squeezed out."""
    table = np.zeros((256, 5), dtype=np.uint8)  # "-128" + the delimiter, NUL-padded
    for value, text in enumerate(_SIGNED):
        table[value, :len(text) + 1] = np.frombuffer((text + ARRAY).encode(), dtype=np.uint8)
    cells = table[data].reshape(len(data), -1)
    keep = cells != 0
    flat = cells[keep].tobytes()
    ends = np.cumsum(keep.sum(axis=1))
    starts = np.concatenate(([0], ends[:-1]))
    return [flat[a:b - 1] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]  # no last delimiter


def _float_texts(matrix: np.ndarray) -> list[bytes]:
    if not np.all(np.abs(matrix) < 9.5):
        template = ARRAY.join(["%.9g"] * matrix.shape[1])
        return [(template % tuple(row)).encode() for row in matrix.tolist()]
    places = 12
    scaled = np.rint(np.abs(matrix.astype(np.float64)) * 10**places).astype(np.int64)
    digits = np.empty((*matrix.shape, places + 1), dtype=np.uint8)
    for k in range(places + 1):  # the last column is the units digit
        digits[..., places - k] = scaled // 10**k % 10
    cells = np.empty((*matrix.shape, places + 4), dtype=np.uint8)  # sign, units, '.', places, delimiter
    cells[..., 0] = np.where(np.signbit(matrix), ord("-"), ord("0"))
    cells[..., 1] = digits[..., 0] + ord("0")
    cells[..., 2] = ord(".")
    cells[..., 3:places + 3] = digits[..., 1:] + ord("0")
    cells[..., places + 3] = ord(ARRAY)
    rows = cells.reshape(len(matrix), -1)[:, :-1]  # no last delimiter
    flat, width = rows.tobytes(), rows.shape[1]
    return [flat[i * width:(i + 1) * width] for i in range(len(matrix))]
