"""A write is journaled before the store commits it (``Engine._commit``): a kill anywhere after the commit
costs the next open a replay, and a record whose write never committed is never replayed.

Each test kills a writer process at one point of a write (``os._exit`` from a wrapped store method), then
opens the store again in this process and compares what it answers with a state rebuilt from the store.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.synthetic import SyntheticCorpus
from hippo.store import SQLiteStore
from tests.test_persist import _open, _outputs, _rebuilt

ROOT = Path(__file__).resolve().parent.parent
CORPUS = SyntheticCorpus(200)

# Commits and then dies (``after``), or dies just before the commit (``before``); either way the process
# ends inside its second write, with nothing after it run.
DYING = """
import os, sys
sys.path.insert(0, {root!r})
from benchmarks.synthetic import SyntheticCorpus, SyntheticEmbedder, SyntheticExtractor
from hippo import Memory, Settings
from hippo.store import SQLiteStore
memory = Memory(SQLiteStore({path!r}), settings=Settings(ppr_solver="exact"), embedder=SyntheticEmbedder(),
                extractor=SyntheticExtractor())
memory.index(SyntheticCorpus(200).documents(100, 104))
commit = SQLiteStore.write
def dying(self, batch):
    if {after}:
        commit(self, batch)
    os._exit(9)
SQLiteStore.write = dying
memory.index(SyntheticCorpus(200).documents(104, 108))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ahead") / "s.db"
    memory = _open(path)
    memory.index(CORPUS.documents(0, 100))
    memory.close()
    return path


def _killed_in_a_write(built: Path, tmp_path: Path, after_commit: bool) -> tuple[Path, int]:
    """A copy of the store whose writer died in its second write; the revision before that write."""
    copy = tmp_path / "s.db"
    shutil.copy(built, copy)
    shutil.copytree(built.with_name("s.db.hippo"), copy.with_name("s.db.hippo"))
    done = subprocess.run([sys.executable, "-c", DYING.format(root=str(ROOT), path=str(copy), after=after_commit)],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert done.returncode == 9, done.stderr[-2000:]
    store = SQLiteStore(copy)
    revision = store.revision()
    store.close()
    return copy, revision - 1 if after_commit else revision


def _journal(path: Path) -> Path:
    [journal] = path.with_name("s.db.hippo").glob("journal-*.bin")
    return journal


def test_a_kill_right_after_the_commit_costs_a_replay_not_a_rebuild(built, tmp_path):
    # Journaled after the commit (before this change), a kill here (the commit's WAL checkpoint, the delta's
    # reads) left the saved state a write behind the store: the next open rebuilt everything, hours at 1M.
    copy, before = _killed_in_a_write(built, tmp_path, after_commit=True)
    memory = _open(copy)
    assert memory.engine.cache.outcome == "loaded"
    assert memory.store.revision() == before + 1
    assert _outputs(memory) == _rebuilt(copy)
    memory.close()


def test_the_record_of_a_write_killed_before_its_commit_is_dropped(built, tmp_path):
    copy, before = _killed_in_a_write(built, tmp_path, after_commit=False)
    journal = _journal(copy)
    journaled = journal.stat().st_size
    memory = _open(copy)
    assert memory.engine.cache.outcome == "loaded"
    assert memory.store.revision() == before
    assert journal.stat().st_size < journaled  # cut: the record is not met again by a later open
    assert _outputs(memory) == _rebuilt(copy)
    memory.index(CORPUS.documents(150, 152))  # the next write takes the dropped record's revision
    memory.engine.cache.close()  # as a crash would: no snapshot at close
    memory.store.close()
    reopened = _open(copy)
    assert reopened.engine.cache.outcome == "loaded"
    assert _outputs(reopened) == _rebuilt(copy)
    reopened.close()


def test_a_dropped_record_is_not_replayed_for_another_writers_write_of_its_revision(built, tmp_path):
    # The writer died before its commit; another process, which keeps no derived state, then made that
    # revision with a write of its own. The record's revision matches the store's, its write id does not.
    copy, before = _killed_in_a_write(built, tmp_path, after_commit=False)
    other = _open(copy, derived_cache=False)
    other.index(CORPUS.documents(150, 152))
    other.close()
    memory = _open(copy)
    assert memory.store.revision() == before + 1
    assert memory.engine.cache.outcome.startswith("stale")  # rebuilt, never the killed write replayed
    assert _outputs(memory) == _rebuilt(copy)
    memory.close()
