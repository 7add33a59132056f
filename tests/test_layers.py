"""The layer contract (README, "How the code is laid out"), checked on every run.

- import-linter's contracts in pyproject.toml: each layer imports only from the layers below it;
- no module imports another module's underscored name (``from hippo.x import _y``);
- in the packages below, no module reads another object's underscored attribute (``obj._x``)
  and no two modules import each other, even through others.

The engine (``hippo.memory``, ``hippo.graph``) is not held to the last two yet: its helpers
still share ``Memory``'s private state (``memory._lock``, ``_current()``), which the engine
refactor of issue 15, after issue 13, replaces with one public write protocol.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
OWN_STATE = ["access", "api", "cli", "store", "llm", "extract", "documents", "embed"]
PENDING_PRIVATE_IMPORTS: set[tuple[str, str, str]] = set()  # (file, module, name) allowed for now


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def test_import_linter_contracts_hold() -> None:
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert command, "import-linter is missing: pip install -e '.[dev]'"
    done = subprocess.run([command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_no_module_imports_another_modules_private_names() -> None:
    found = set()
    for path in python_files("hippo", "tests", "benchmarks"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("hippo"):
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and node.module != module_name(path):
                        found.add((str(path.relative_to(ROOT)), node.module, alias.name))
    assert found == PENDING_PRIVATE_IMPORTS


def test_no_module_reads_another_objects_private_attributes() -> None:
    found = []
    for path in python_files(*(f"hippo/{package}" for package in OWN_STATE)):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert found == []


def test_no_import_cycles_inside_the_packages() -> None:
    graph = grimp.build_graph("hippo")
    cycles = []
    for package in OWN_STATE:
        modules = {m for m in graph.find_descendants(f"hippo.{package}")} | {f"hippo.{package}"}
        for module in sorted(modules):
            for imported in graph.find_modules_directly_imported_by(module) & modules:
                # A package's __init__ re-exporting its modules is not a cycle of their own.
                if module != f"hippo.{package}" and imported != f"hippo.{package}" and \
                        graph.chain_exists(importer=imported, imported=module):
                    cycles.append(f"{module} <-> {imported}")
    assert cycles == []
