"""One Neo4j server as the store talks to it: its URL, the driver, and every statement run
under one error guard that turns driver and server errors into one line a person can act on.

Statements are files (``hippo/cypher/<name>.cypher``, read by ``hippo.store.cypher``). A read
runs first as an auto-commit query on a READ session of its thread's own (on a cluster, sent to a
follower or read replica), and on an error worth retrying again in a managed read transaction
(``execute_query`` with READ routing). Writes and schema changes run in managed write transactions
(routed to the leader). A managed transaction is run again from the start on a transient error or
a leader change, for up to ``max_retry_time`` seconds. ``neo4j://`` and ``neo4j+s://`` (Aura) URLs
route; ``bolt://`` talks to one server.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from hippo.errors import HippoError, StoreError
from hippo.store.cypher import cypher
from hippo.store.neo4j.params import UnloggedTransaction, unlogged

try:
    import neo4j
    from neo4j import exceptions as neo4j_errors
except ImportError:  # pragma: no cover - the neo4j extra is not installed
    neo4j = None  # type: ignore[assignment]
    neo4j_errors = None  # type: ignore[assignment]

T = TypeVar("T")

MIN_SERVER = (5, 26)
SCHEMES = {"neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"}


@dataclass(frozen=True)
class NeoUrl:
    scheme: str
    address: str  # host:port, IPv6 hosts in brackets
    user: str | None
    password: str | None
    database: str | None


def parse_url(url: str) -> NeoUrl:
    """Split a Neo4j URL; errors never echo the password."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    if parts.scheme not in SCHEMES:
        raise StoreError(f"not a Neo4j URL: {parts.scheme or '(no scheme)'}://{host} (use neo4j:// or bolt://)")
    try:
        port = parts.port or 7687
    except ValueError:
        raise StoreError(f"bad port in Neo4j URL {parts.scheme}://{host}") from None
    if ":" in host:
        host = f"[{host}]"
    return NeoUrl(parts.scheme, f"{host}:{port}", unquote(parts.username) if parts.username else None,
                  unquote(parts.password) if parts.password is not None else None,
                  unquote(parts.path.strip("/")) or None)


def first_line(text: str) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= 300 else line[:297] + "…"


def unreachable_reason(text: str) -> str:
    """The useful part of the driver's multi-line connection error."""
    if "looks like HTTP" in text:
        return "that port speaks HTTP, not Bolt (the Bolt port is usually 7687)"
    found = re.search(r"\(reason (?:\[Errno -?\d+\] )?([^)]*)\)", text)
    if found:
        return found.group(1).strip()
    if "routing information" in text or "towards 'READ' server" in text or "towards 'WRITE' server" in text:
        # neo4j:// asks for a routing table first; when no server answers, that is all the driver says
        return "no server answered (is Neo4j running there?)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return first_line(lines[-1]) if lines else ""


def check_server_version(version: str, edition: str, where: str) -> None:
    """Refuse a server older than 5.26 (calendar versions such as 2025.01 are newer)."""
    parsed = tuple(int(part) for part in re.findall(r"\d+", version)[:3])
    if not parsed or parsed[:2] < MIN_SERVER:
        raise StoreError(
            f"Neo4j at {where} runs {version} ({edition}); hippo needs Neo4j "
            f"{'.'.join(map(str, MIN_SERVER))} or newer"
        )


class Connection:
    """The driver of one database, and the only place its errors are translated."""

    def __init__(self, url: NeoUrl, user: str, password: str, database: str | None, *,
                 connection_timeout: float, max_retry_time: float) -> None:
        if neo4j is None:
            raise StoreError("the Neo4j store needs the neo4j driver: pip install 'hippo[neo4j]'")
        self.user = user
        self.database = database
        self.url = f"{url.scheme}://{user}@{url.address}" + (f"/{database}" if database else "")
        try:
            self.driver = neo4j.GraphDatabase.driver(
                f"{url.scheme}://{url.address}", auth=(user, password),
                connection_timeout=connection_timeout, max_transaction_retry_time=max_retry_time,
                # "relationship type MENTIONS does not exist" on a new store's first reads: expected, and
                # a screenful on stderr. Deprecations too: the frontier reads use id() on purpose
                # (read_neighbours.cypher says why), and tests/test_neo4j_cypher.py fails on any other
                # deprecated feature in hippo's statements. Performance warnings still come through.
                notifications_min_severity="WARNING",
                notifications_disabled_classifications=["UNRECOGNIZED", "DEPRECATION"],
            )
        except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, ValueError) as exc:
            raise StoreError(f"cannot open Neo4j at {self.url}: {first_line(str(exc))}") from None
        self.bookmarks = neo4j.GraphDatabase.bookmark_manager()
        self._reading = threading.local()  # each thread's READ session (a session is not thread-safe)
        self._sessions: list[Any] = []  # every one opened, to close with the driver
        self._sessions_lock = threading.Lock()

    def error(self, exc: Exception, doing: str) -> StoreError:
        """One line a person can act on, for any driver or server error."""
        if isinstance(exc, neo4j_errors.AuthError):
            return StoreError(f"Neo4j at {self.url} refused user {self.user!r}: wrong user or password "
                              "(set NEO4J_USER / NEO4J_PASSWORD or put them in the URL)")
        if isinstance(exc, (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired)):
            reason = unreachable_reason(str(exc)) or type(exc).__name__
            return StoreError(f"cannot reach Neo4j at {self.url} while {doing}: {reason}")
        if isinstance(exc, neo4j_errors.Neo4jError):
            code = exc.code or type(exc).__name__
            if code.endswith("DatabaseNotFound"):
                return StoreError(f"Neo4j at {self.url} has no database {self.database!r}")
            return StoreError(f"Neo4j refused {doing} at {self.url}: {code}: {first_line(exc.message or '')}")
        return StoreError(f"Neo4j error while {doing} at {self.url}: {type(exc).__name__}: "
                          f"{first_line(str(exc))}")

    def guard(self, doing: str, work: Callable[[], T]) -> T:
        try:
            return work()
        except HippoError:
            raise
        except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, OSError) as exc:
            raise self.error(exc, doing) from None

    def session(self) -> Any:
        # One bookmark manager for every session of this connection: on a cluster a read routed to a
        # follower waits until that follower has this process's own writes (read-your-writes).
        return self.driver.session(database=self.database, bookmark_manager=self.bookmarks)

    def verify(self) -> None:
        self.guard("connecting", self.driver.verify_connectivity)

    def read(self, name: str, doing: str, **params: Any) -> list[Any]:
        """Run one read statement from ``hippo/cypher/<name>.cypher`` (retried on transient errors).

        As an auto-commit query on this thread's READ session: RUN and PULL in one round trip with
        no BEGIN or COMMIT, ~0.2 ms less client CPU and ~0.1 ms less server CPU a statement than
        ``execute_query`` (a store-side recall runs ~25). An error worth retrying (a transient one,
        a lost server, a follower gone) runs it again as a managed read transaction, which the driver
        retries; any other error is the same ``StoreError`` either way."""
        query = cypher(name)
        try:
            return list(self._read_session().run(query, unlogged(params)))
        except HippoError:
            raise
        except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, OSError) as exc:
            self._drop_read_session()
            if not (isinstance(exc, (neo4j_errors.DriverError, neo4j_errors.Neo4jError)) and exc.is_retryable()):
                raise self.error(exc, doing) from None
        return self._run(name, doing, write=False, **params)

    def _read_session(self) -> Any:
        session = getattr(self._reading, "session", None)
        if session is None:
            # The bookmark manager every session shares: a read waits for this process's own writes.
            session = self.driver.session(database=self.database, bookmark_manager=self.bookmarks,
                                          default_access_mode=neo4j.READ_ACCESS)
            with self._sessions_lock:
                self._sessions.append(session)
            self._reading.session = session
        return session

    def _drop_read_session(self) -> None:
        """After an error a thread starts a new session: the old one may hold a broken connection."""
        session, self._reading.session = getattr(self._reading, "session", None), None
        if session is not None:
            with self._sessions_lock:
                if session in self._sessions:  # else ``close`` took it already
                    self._sessions.remove(session)
            _close_quietly(session)

    def write_one(self, name: str, doing: str, **params: Any) -> list[Any]:
        """Run one write statement in a transaction of its own."""
        return self._run(name, doing, write=True, **params)

    def _run(self, name: str, doing: str, *, write: bool, **params: Any) -> list[Any]:
        query = cypher(name)

        routing = neo4j.RoutingControl.WRITE if write else neo4j.RoutingControl.READ

        def run() -> list[Any]:
            # ``execute_query`` sends BEGIN with the statement (a session's ``execute_read`` waits for
            # BEGIN's answer first): one round trip fewer a statement, same routing, bookmarks, retries.
            return self.driver.execute_query(query, unlogged(params), routing_=routing, database_=self.database,
                                             bookmark_manager_=self.bookmarks, result_transformer_=list)

        return self.guard(doing, run)

    def transaction(self, doing: str, work: Callable[[Any], T]) -> T:
        """``work(tx)`` as one explicit write transaction, run again from the start on a transient error."""
        def run() -> T:
            with self.session() as session:
                return session.execute_write(lambda tx: work(UnloggedTransaction(tx)))

        return self.guard(doing, run)

    def schema(self, query: str, doing: str, **params: Any) -> None:
        """A schema statement in a managed write transaction of its own (on a cluster: sent to the
        leader, run again after a leader change); racing openers are fine."""
        def work(tx: Any) -> None:
            tx.run(query, unlogged(params)).consume()

        def run() -> None:
            with self.session() as session:
                try:
                    session.execute_write(work)
                except neo4j_errors.ClientError as exc:
                    if "AlreadyExists" not in (exc.code or ""):
                        raise

        self.guard(doing, run)

    def batched(self, query: str, doing: str, **params: Any) -> None:
        """A statement that commits in batches of its own (``CALL ... IN TRANSACTIONS``), which only an
        auto-commit transaction may run (sent to the leader: the session's default mode is WRITE)."""
        def run() -> None:
            with self.session() as session:
                session.run(query, unlogged(params)).consume()

        self.guard(doing, run)

    def close(self) -> None:
        with self._sessions_lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            _close_quietly(session)
        self.driver.close()


def _close_quietly(session: Any) -> None:
    """Close a read session whose connection may be gone already (then there is nothing to release;
    closing the driver releases whatever is left)."""
    try:
        session.close()
    except (neo4j_errors.DriverError, neo4j_errors.Neo4jError, OSError):
        pass
