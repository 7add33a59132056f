"""A fresh clone without ``../shared`` beside it: the tests of the shared tuning sets skip
with one line naming ``HIPPO_DATASETS``; under ``CI`` they fail instead, since there every
test must run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_musique_test(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"HIPPO_DATASETS": str(tmp_path / "absent")}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_musique.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_missing_shared_datasets_skip_outside_ci(tmp_path: Path) -> None:
    done = run_musique_test(tmp_path, None)
    assert done.returncode == 0, done.stdout
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1 and "set HIPPO_DATASETS" in skipped[0], done.stdout


def test_missing_shared_datasets_fail_under_ci(tmp_path: Path) -> None:
    done = run_musique_test(tmp_path, "true")
    assert done.returncode == 1, done.stdout
    assert "shared datasets not found" in done.stdout and "set HIPPO_DATASETS" in done.stdout
