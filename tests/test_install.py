"""A plain (not editable) ``pip install .`` works away from the checkout.

Everything hippo reads at run time (Cypher, the Browser files, the sample corpus, the SQLite
schema) must ship inside the package. This installs the package's files into a fresh
virtualenv (``--no-deps``: it sees this interpreter's packages through
``--system-site-packages``), then runs that install's ``hippo`` from a directory outside the
checkout: ``hippo demo`` on Neo4j, then a recall of what it stored from a new process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.neo4j


def run(*args: str | Path, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args[0]} {args[1]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin/`` of a fresh virtualenv holding a regular install of this checkout."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"  # only what the build reads: nothing else of the checkout can leak in
    shutil.copytree(ROOT / "hippo", source / "hippo", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    venv = base / "venv"
    env = {k: v for k, v in os.environ.items() if k not in {"HIPPO_CYPHER_DIR", "PYTHONPATH", "VIRTUAL_ENV"}}
    run(sys.executable, "-m", "venv", "--system-site-packages", venv, cwd=base, env=env)
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", source, cwd=base, env=env)
    shutil.rmtree(source)  # the install must not need its source
    return venv / "bin"


def test_a_regular_install_runs_the_demo_and_recalls_from_neo4j_outside_the_checkout(
        installed: Path, neo4j_server: dict[str, str], neo4j_wipe: Callable[[], None],
        tmp_path: Path) -> None:
    neo4j_wipe()
    env = {k: v for k, v in os.environ.items() if k not in {"HIPPO_CYPHER_DIR", "PYTHONPATH", "VIRTUAL_ENV"}}
    env |= {"NEO4J_USER": neo4j_server["user"], "NEO4J_PASSWORD": neo4j_server["password"], "HF_HUB_OFFLINE": "1"}
    where = run(installed / "python", "-c", "import hippo; print(hippo.__file__)", cwd=tmp_path, env=env)
    assert Path(where.stdout.strip()).is_relative_to(installed.parent), where.stdout  # not the checkout

    demo = run(installed / "hippo", "demo", "--store", neo4j_server["uri"], "--questions", "1", cwd=tmp_path, env=env)
    assert "indexed the sample corpus" in demo.stdout
    assert "Recall@5 over all 18 sample questions" in demo.stdout

    recalled = run(installed / "hippo", "recall", "When was the Veskari Maritime Museum founded?",
                   "--store", neo4j_server["uri"], "--json", cwd=tmp_path, env=env)
    hits = json.loads(recalled.stdout)["hits"]
    assert hits and hits[0]["title"] == "Veskari Maritime Museum"
