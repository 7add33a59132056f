"""What the benchmark scripts share: machine facts, timing statistics, output files.

Nothing here measures anything by itself. ``machine_info`` describes where a
run happened, ``percentiles`` summarizes latency samples, and ``write_outputs``
puts a JSON record and its Markdown rendering side by side in ``results/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
CACHE = RESULTS / "cache"

# Versions worth knowing when comparing two runs.
_PACKAGES = ("hippo", "numpy", "scipy", "igraph", "torch", "sentence-transformers", "transformers", "spacy",
             "faiss-cpu", "matplotlib")


def offline() -> None:
    """Never let a benchmark reach for a model hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def available_ram_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def versions(packages: Iterable[str] = _PACKAGES) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def machine_info() -> dict[str, Any]:
    """CPU, cores, RAM, Python and library versions, and when: the context of every number."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gb": _ram_gb(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "versions": versions(),
        "git_commit": _git_commit(),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        # Other processes on a 2-core machine skew every timing: record how busy it was.
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if "torch" in sys.modules:  # only when a script already paid for importing it
        torch = sys.modules["torch"]
        info["torch_threads"] = torch.get_num_threads()
    return info


def machine_line(info: dict[str, Any]) -> str:
    v = info.get("versions", {})
    return (f"{info['cpu']}, {info['cores']} cores, {info['ram_gb']} GB RAM; Python {info['python']}, "
            f"torch {v.get('torch')}, igraph {v.get('igraph')}, numpy {v.get('numpy')}; {info['timestamp']}; "
            f"load average {info.get('load_average')}")


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (``ru_maxrss`` is in KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class Stopwatch:
    """``with Stopwatch() as w: ...`` then ``w.seconds``."""

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start


def percentiles(samples: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    """``{"p50": ..., "p95": ..., "p99": ..., "mean": ..., "n": ...}`` of samples, in their own unit."""
    if not samples:
        return {f"p{p}": float("nan") for p in points} | {"mean": float("nan"), "n": 0}
    values = np.asarray(samples, dtype=np.float64)
    out = {f"p{p}": float(np.percentile(values, p)) for p in points}
    out["mean"] = float(values.mean())
    out["n"] = int(values.size)
    return out


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub Markdown table; floats printed with one decimal unless already strings."""
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "–" if np.isnan(value) else f"{value:.1f}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def write_outputs(stem: str, record: dict[str, Any], markdown: str, out_dir: Path = RESULTS) -> tuple[Path, Path]:
    """``<out_dir>/<stem>.json`` and ``<out_dir>/<stem>.md``; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(_jsonable(record), indent=2) + "\n", encoding="utf-8")
    md_path.write_text(markdown.rstrip() + "\n", encoding="utf-8")
    return json_path, md_path


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``["damping=0.6", "passage_readout=blend"]`` -> a dict, values parsed as JSON when they parse."""
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--set expects key=value, got {pair!r}")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        overrides[key.strip()] = value
    return overrides


def make_settings(overrides: dict[str, Any], **fixed: Any):
    """``hippo.Settings`` with overrides, refusing unknown keys (a typo must not silently do nothing)."""
    import hippo

    known = set(hippo.Settings.model_fields)
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise SystemExit(f"unknown setting(s) {unknown}; known: {sorted(known)}")
    return hippo.Settings(**{**overrides, **fixed})


@contextlib.contextmanager
def igraph_single_thread() -> Iterator[bool]:
    """igraph's own OpenMP runtime (PRPACK) limited to one thread; yields whether one was found.

    igraph wheels vendor a libgomp separate from torch's. On 2 busy cores its
    spinning OpenMP team stalls PPR (~150 ms floor per call): one thread is
    5-100x faster below 100k passages.
    """
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    paths = [lib.filepath for lib in controller.lib_controllers
             if lib.user_api == "openmp" and "igraph" in lib.filepath]
    if not paths:
        yield False
        return
    with controller.select(filepath=paths).limit(limits=1):
        yield True


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def progress_printer(label: str):
    """A ``progress(stage, done, total)`` callback that prints each stage change and every ~10%."""
    last: dict[str, int] = {}
    start = time.perf_counter()

    def report(stage: str, done: int, total: int) -> None:
        step = max(1, total // 10)
        previous = last.get(stage)
        if previous is None or done == total or done - previous >= step:
            last[stage] = done
            log(f"  [{label}] {stage} {done}/{total} ({time.perf_counter() - start:.0f}s)")

    return report
