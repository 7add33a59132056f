"""A Neo4j server on this machine whose home directory hippo can read: stop it, start it, and
run ``neo4j-admin`` on its files (what a bulk import needs; a remote server, a cluster or Aura
is not one of these).

Two layouts are understood: a tarball install (``bin/neo4j``, ``bin/neo4j-admin``) and the
server ``scripts/neo4j`` assembles from Maven Central jars (``lib/*.jar``, run through the
classes those scripts start: ``Neo4jBoot`` and ``AdminTool``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from hippo.errors import StoreError

ENTRY_POINTS = ("org.neo4j.server.CommunityEntryPoint", "org.neo4j.server.EnterpriseEntryPoint",
                "org.neo4j.server.Neo4jCommunity", "org.neo4j.server.Neo4jEnterprise")


@dataclass(frozen=True)
class LocalNeo4j:
    home: Path

    @classmethod
    def at(cls, home: Path) -> LocalNeo4j:
        home = home.expanduser().resolve()
        if not (home / "conf" / "neo4j.conf").is_file():
            raise StoreError(f"{home} is not a Neo4j home (no conf/neo4j.conf); give --home the directory "
                             "the server runs from (HIPPO_NEO4J_HOME for scripts/neo4j)")
        server = cls(home)
        if not (home / "bin" / "neo4j-admin").is_file() and not list((home / "lib").glob("neo4j-import-tool-*.jar")):
            raise StoreError(f"the Neo4j in {home} has no import tool (neither bin/neo4j-admin nor "
                             "lib/neo4j-import-tool-*.jar)")
        return server

    # -- what it is -----------------------------------------------------------------------

    def setting(self, key: str) -> str | None:
        found = None
        for raw in (self.home / "conf" / "neo4j.conf").read_text(encoding="utf-8").splitlines():
            name, _, value = raw.strip().partition("=")
            if name.strip() == key:
                found = value.strip()
        return found

    def bolt_port(self) -> int:
        address = self.setting("server.bolt.listen_address") or ":7687"
        found = re.search(r":(\d+)$", address)
        return int(found.group(1)) if found else 7687

    def pid(self) -> int | None:
        """The server's process id, or None when it is not running."""
        pidfile = self.home / "run" / "neo4j.pid"
        try:
            pid = int(pidfile.read_text(encoding="utf-8").strip())
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            return None
        return pid if any(entry in command for entry in ENTRY_POINTS) else None

    # -- what it does ---------------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        return {**os.environ, "NEO4J_HOME": str(self.home), "NEO4J_CONF": str(self.home / "conf")}

    def _java(self, main: str, *args: str, heap: str = "128m") -> list[str]:
        java = os.environ.get("NEO4J_JAVA") or (os.path.join(os.environ["JAVA_HOME"], "bin", "java")
                                                if os.environ.get("JAVA_HOME") else shutil.which("java"))
        if not java:
            raise StoreError("no java found to run Neo4j's tools (set NEO4J_JAVA or JAVA_HOME)")
        return [java, f"-Xmx{heap}", "-cp", str(self.home / "lib" / "*"), main, *args]

    def stop(self, timeout: float = 120.0) -> None:
        pid = self.pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except PermissionError:
            raise StoreError(f"cannot stop the Neo4j server in {self.home} (pid {pid}): it belongs to another "
                             "user; run the import as that user") from None
        deadline = time.monotonic() + timeout
        while Path(f"/proc/{pid}").exists():
            if time.monotonic() > deadline:
                raise StoreError(f"the Neo4j server in {self.home} (pid {pid}) did not stop within {timeout:.0f}s")
            time.sleep(0.3)
        (self.home / "run" / "neo4j.pid").unlink(missing_ok=True)

    def start(self, timeout: float = 180.0) -> None:
        """Start it with its own configuration; returns once the launcher says it started."""
        if self.pid() is not None:
            return
        launcher = self.home / "bin" / "neo4j"
        command = [str(launcher), "start"] if launcher.is_file() else self._java(
            "org.neo4j.server.startup.Neo4jBoot", "start")
        done = subprocess.run(command, cwd=self.home, env=self._environment(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout, start_new_session=True, check=False)
        if done.returncode != 0 or self.pid() is None:
            raise StoreError(f"the Neo4j server in {self.home} did not start: "
                             f"{(done.stderr or done.stdout).strip()[-300:]} (see {self.home / 'logs'})")

    def drop_database_files(self, database: str) -> None:
        """Delete one database's store and transaction files (the server stopped): on the next start
        the server creates it again, empty. What a failed import into an empty database leaves is
        thereby the empty database it was."""
        data = self.home / (self.setting("server.directories.data") or "data")
        for folder in (data / "databases" / database, data / "transactions" / database):
            if folder.resolve().parent.parent != data.resolve():
                raise StoreError(f"refusing to delete {folder}: not a database folder of {data}")
            shutil.rmtree(folder, ignore_errors=True)

    def admin(self, *args: str, heap: str = "1g", timeout: float = 6 * 3600) -> str:
        """Run ``neo4j-admin ARGS`` on this home's files; its output, or a StoreError with its tail."""
        tool = self.home / "bin" / "neo4j-admin"
        command = [str(tool), *args] if tool.is_file() else self._java("org.neo4j.cli.AdminTool", *args, heap=heap)
        done = subprocess.run(command, cwd=self.home, env=self._environment(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout, check=False)
        output = (done.stdout or "") + (done.stderr or "")
        if done.returncode != 0:
            tail = " | ".join(line.strip() for line in output.strip().splitlines()[-6:])
            raise StoreError(f"neo4j-admin {' '.join(args[:3])} failed in {self.home}: {tail}")
        return output
