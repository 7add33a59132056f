"""The access-control leak suite (``tests/test_access.py``), unchanged, with recall served from Neo4j.

Every test of that module that reads the shared ``world`` runs here again on
the Neo4j store with ``HIPPO_NEO4J_READ=store`` (``hippo.memory.store_source``):
no canary reaches a principal without access, and every ranking equals the one
a store without the hidden documents gives, now with candidates from Neo4j's
vector and full-text indexes and PPR pulled frontier by frontier. The tests
that do not use the world (key files, sessions, principals) do not depend on
the read mode and are not repeated.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests import test_access
from tests.test_access import World, _build

pytestmark = pytest.mark.neo4j

for _name, _test in vars(test_access).items():
    if _name.startswith("test_") and "world" in inspect.signature(_test).parameters:
        globals()[_name] = _test


@pytest.fixture(scope="module")
def world(request: pytest.FixtureRequest, embedder: Any) -> Iterator[World]:
    from hippo.store.neo4j import Neo4jStore

    server = request.getfixturevalue("neo4j_server")
    wipe = request.getfixturevalue("neo4j_wipe")
    before = os.environ.get("HIPPO_NEO4J_READ")
    os.environ["HIPPO_NEO4J_READ"] = "store"  # read by every Settings() the suite makes
    try:
        yield from _build(lambda _: Neo4jStore(server["uri"], server["user"], server["password"]), wipe, embedder,
                          "neo4j")
    finally:
        if before is None:
            os.environ.pop("HIPPO_NEO4J_READ", None)
        else:
            os.environ["HIPPO_NEO4J_READ"] = before
