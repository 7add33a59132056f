"""The layer contract (README, "How the code is laid out"), checked on every run.

- import-linter's contracts in pyproject.toml: each layer imports only from the layers below it;
- no module is over ``MAX_MODULE_LINES`` lines (small modules with one job each);
- no module imports another module's underscored name (``from hippo.x import _y``);
- in the packages below, no module reads an underscored attribute (``obj._x``) that another
  module defines (``self._x``, ``cls._x``, and objects of the module's own classes are its own),
  and no two modules import each other, even through others (at run time: an import under
  ``TYPE_CHECKING`` names a type, it does not load the module).

The engine's state (lock, guard, derived indexes, background embedding) is private to
``hippo.memory.core.Engine``; everything else writes through ``Engine.write(plan)`` and reads
through ``Engine.reading()`` / ``Engine.state``.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
OWN_STATE = ["access", "api", "cli", "store", "llm", "extract", "documents", "embed", "memory", "graph"]
PENDING_PRIVATE_IMPORTS: set[tuple[str, str, str]] = set()  # (file, module, name) allowed for now
MAX_MODULE_LINES = 400


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


def test_no_module_is_over_the_line_limit() -> None:
    long = {str(path.relative_to(ROOT)): n for path in python_files("hippo")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


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


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def own_private_names(tree: ast.Module) -> set[str]:
    """Underscored attributes a module defines: its classes' methods and fields, and what it assigns."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and private(item.name):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and private(item.target.id):
                    names.add(item.target.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and private(node.attr):
            names.add(node.attr)
    return names


def test_no_module_reads_another_modules_private_attributes() -> None:
    found = []
    for path in python_files(*(f"hippo/{package}" for package in OWN_STATE)):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = own_private_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private(node.attr):
                mine = isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}
                if not mine and node.attr not in own:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert found == []


def test_no_noqa_hides_a_private_access() -> None:
    found = [f"{path.relative_to(ROOT)}:{number}" for path in python_files("hippo")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "SLF001" in line]
    assert found == []


def test_no_import_cycles_inside_the_packages() -> None:
    graph = grimp.build_graph("hippo", exclude_type_checking_imports=True)
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
