"""Every statement hippo ships (``hippo/cypher``, the Browser's ``browse/`` too), planned by a real
Neo4j (``EXPLAIN``): each one parses, and the only deprecated feature any of them uses is ``id()`` in
the two frontier statements, chosen knowingly (``read_neighbours.cypher`` says why). The driver is
told not to log deprecations (``hippo.store.neo4j.connection``), so this test is what notices a new one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hippo.store.cypher import cypher_dir, cypher_statements

pytestmark = pytest.mark.neo4j

ID_ON_PURPOSE = {"read_neighbours", "read_keyed_nodes"}
GDS = "gds_"  # planned only where the server has the Graph Data Science library (tests/test_neo4j_gds.py)


@pytest.fixture(scope="module")
def driver(neo4j_server: dict[str, str]) -> Iterator[Any]:
    import neo4j

    with neo4j.GraphDatabase.driver(neo4j_server["uri"], auth=(neo4j_server["user"], neo4j_server["password"]),
                                    notifications_min_severity="WARNING") as driver:
        yield driver


def _has_gds(driver: Any) -> bool:
    with driver.session() as session:
        return bool(session.run("SHOW FUNCTIONS YIELD name WHERE name = 'gds.version' RETURN count(*) AS n")
                    .single()["n"])


def _deprecations(driver: Any, statement: str) -> list[str]:
    import neo4j

    with driver.session() as session:
        summary = session.run("EXPLAIN " + statement).consume()
    return [status.status_description for status in summary.gql_status_objects
            if status.is_notification and status.classification == neo4j.NotificationClassification.DEPRECATION]


def test_every_statement_plans_and_uses_no_deprecated_feature_but_id_in_the_frontier_reads(driver: Any):
    names = sorted(path.relative_to(cypher_dir()).with_suffix("").as_posix() for path in cypher_dir().rglob("*.cypher"))
    if not _has_gds(driver):
        names = [name for name in names if not name.startswith(GDS)]
    assert len(names) > 100 and {"read_neighbours", "browse/hubs"} <= set(names)
    found = {}
    for name in names:
        for statement in cypher_statements(name):
            deprecated = _deprecations(driver, statement)
            if deprecated:
                found.setdefault(name, []).extend(deprecated)
    assert set(found) == ID_ON_PURPOSE, found
    assert all("id is deprecated" in text for name in ID_ON_PURPOSE for text in found[name]), found
