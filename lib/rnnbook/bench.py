"""``make bench``: run every ``bench/*.py`` and print one table of their speed-up ratios (all
chapters). Each bench times a chapter's batched computation against a simple baseline in the same
process and prints its ratio last, as ``speed-up: <ratio>x``."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from rnnbook.paths import BOOK_ROOT

BENCH_DIR = BOOK_ROOT / "bench"
RATIO = re.compile(r"([0-9]+(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?)\s*x\s*$", re.I)


def parse_ratio(output: str) -> float | None:
    """The speed-up ratio on the last non-empty line of a bench's output (``... 8.2x``)."""
    lines = [line for line in output.splitlines() if line.strip()]
    m = RATIO.search(lines[-1]) if lines else None
    return float(m.group(1)) if m else None


def run_all(bench_dir: Path = BENCH_DIR, timeout: float = 3600) -> list[dict]:
    """Run each bench script in its own process; return name, ratio, seconds and status."""
    rows = []
    for script in sorted(bench_dir.glob("*.py")):
        print(f"running {script.relative_to(bench_dir.parent)} ...", flush=True)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                  timeout=timeout, cwd=bench_dir.parent)
            ratio = parse_ratio(proc.stdout)
            status = "ok" if proc.returncode == 0 and ratio is not None else \
                f"failed (exit {proc.returncode}{'' if ratio is not None else ', no ratio'})"
            detail = (proc.stdout + proc.stderr).strip().splitlines()
        except subprocess.TimeoutExpired:
            ratio, status, detail = None, f"timed out after {timeout:.0f} s", []
        rows.append({"bench": script.stem, "ratio": ratio, "seconds": time.perf_counter() - t0,
                     "status": status, "detail": detail[-5:]})
    return rows


def table(rows: list[dict]) -> str:
    """The speed-up table as aligned text."""
    lines = [f"{'bench':<24} {'speed-up':>10} {'wall s':>8}  status",
             f"{'-' * 24} {'-' * 10} {'-' * 8}  ------"]
    for r in rows:
        ratio = f"{r['ratio']:.1f}x" if r["ratio"] is not None else "-"
        lines.append(f"{r['bench']:<24} {ratio:>10} {r['seconds']:>8.1f}  {r['status']}")
    return "\n".join(lines)


def main() -> int:
    rows = run_all()
    for r in rows:
        if r["status"] != "ok":
            print(f"\n{r['bench']}: {r['status']}\n  " + "\n  ".join(r["detail"]))
    print("\n" + table(rows))
    return 0 if rows and all(r["status"] == "ok" for r in rows) else 1
