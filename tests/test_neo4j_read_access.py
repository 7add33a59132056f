"""The access-control leak suite (``tests/test_access.py``), unchanged, with recall served from Neo4j.

Every test of that module that reads the shared ``world`` runs here again on
the Neo4j store with ``HIPPO_NEO4J_READ=store`` (``hippo.memory.store_source``):
no canary reaches a principal without access, and every ranking equals the one
a store without the hidden documents gives, now with candidates from Neo4j's
vector and full-text indexes and PPR pulled frontier by frontier, then walked
inside the server by ``hippo.push`` (``WALKS``). The tests
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


# The walk by frontier waves (the sample's graph is small enough for the exact iteration, as in process),
# and by the local push inside the server (``hippo.push``, which the exact iteration would not call).
WALKS = {"waves": {},
         "server": {"HIPPO_NEO4J_READ_PUSH": "server", "HIPPO_PPR_SOLVER": "push"}}


@pytest.fixture(scope="module", params=list(WALKS))
def world(request: pytest.FixtureRequest, embedder: Any) -> Iterator[World]:
    from hippo.store.neo4j import Neo4jStore

    server = request.getfixturevalue("neo4j_server")
    wipe = request.getfixturevalue("neo4j_wipe")
    env = {"HIPPO_NEO4J_READ": "store", **WALKS[request.param]}  # read by every Settings() the suite makes
    before = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield from _build(lambda _: Neo4jStore(server["uri"], server["user"], server["password"]), wipe, embedder,
                          "neo4j")
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
