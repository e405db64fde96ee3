"""Side by side: a job of ours and its floor or peer, measured in turns in one run.

Every benchmark of issue 35 reports through this module, so that each row says the same things
the same way: both medians with their spread, the median of the per-pair ratios with its
spread, the target and whether it is met, and the machine's load average when the run began
and ended (a loaded machine moves every absolute figure; the ratios of pairs taken in turns
move much less).

- ``interleaved(jobs, pairs)``: one warm-up run of each job, then ``pairs`` rounds of all of
  them, the order reversed every other round (so neither side always runs right after the
  other); each job returns its ``Sample`` (wall and CPU seconds, or bytes).
- ``Table``: the rows, printed as they come and as Markdown at the end (``--markdown FILE``
  writes the table there too, for ``readme_performance.py``).
- ``run_process``: one whole process, its wall time and its CPU time (user + system).
- ``visidata``: the peer's ``vd``, installed from PyPI into a throwaway virtualenv of the run
  (or ``$VISIDATA``, or one kept with ``--peers DIR`` between runs).
"""

from __future__ import annotations

import datetime
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Sample:
    """One run of a job: ``wall`` and ``cpu`` seconds (or bytes, for a memory job)."""

    wall: float
    cpu: float


Job = Callable[[], Sample]


def interleaved(jobs: dict[str, Job], pairs: int) -> dict[str, list[Sample]]:
    """``pairs`` samples of every job, taken in turns after one warm-up run of each (bytecode
    compiled, files in the page cache): a busy spell of the machine falls on all of them."""
    if pairs < 7:
        raise SystemExit("at least 7 pairs: a median of fewer says little on a shared machine")
    for job in jobs.values():
        job()
    samples: dict[str, list[Sample]] = {name: [] for name in jobs}
    names = list(jobs)
    for n in range(pairs):
        for name in names if n % 2 == 0 else reversed(names):
            samples[name].append(jobs[name]())
    return samples


def run_process(
    argv: Sequence[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdin: int | None = subprocess.DEVNULL,
    check: bool = True,
) -> Sample:
    """One run of ``argv`` to its end, its output discarded (a failure raises with its stderr,
    with ``check``): wall and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=stdin, env=env, cwd=cwd
    )
    if check and done.returncode != 0:
        raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Sample(wall, cpu)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def ratios(ours: Sequence[Sample], peer: Sequence[Sample], cpu: bool = False) -> list[float]:
    """The per-pair ratios (ours / peer) of wall time, or of CPU time."""
    if cpu:
        return [a.cpu / b.cpu for a, b in zip(ours, peer, strict=True)]
    return [a.wall / b.wall for a, b in zip(ours, peer, strict=True)]


def seconds(samples: Sequence[Sample], cpu: bool = False) -> str:
    """``'412 ms (390-455)'``: the median and the spread (least to most) of the samples."""
    values = [s.cpu if cpu else s.wall for s in samples]
    return f"{median(values) * 1000:.0f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


def ratio_text(values: Sequence[float]) -> str:
    """``'1.21x (1.10-1.35)'``: the median of the per-pair ratios and their spread."""
    return f"{median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def machine_is_loaded() -> bool:
    """More runnable work than CPUs over the last minute: the figures are a loaded machine's."""
    return os.getloadavg()[0] > (os.cpu_count() or 1)


@dataclass
class Table:
    """A benchmark's rows: job, ours, floor or peer, ratio, target, met."""

    title: str
    command: str
    timed: bool = True  # times move with the machine's load; memory does not
    rows: list[tuple[str, str, str, str, str, str]] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)

    def begin(self) -> None:
        self.loads.append(load_average())
        print(f"{self.title}: {self.command}", flush=True)
        print(f"{datetime.date.today().isoformat()}, python {sys.version.split()[0]}")
        print(f"at the start: {self.loads[-1]}", flush=True)

    def add(
        self, job: str, ours: str, peer: str, ratio: str, target: str, met: bool | None
    ) -> None:
        verdict = "" if met is None else ("met" if met else "**not met**")
        self.rows.append((job, ours, peer, ratio, target, verdict))
        print(f"- {job}: {ours} | {peer} | {ratio} | target {target or '-'}: {verdict or '-'}")
        print(f"  ({load_average()})", flush=True)

    def end(self, markdown: Path | None = None) -> None:
        self.loads.append(load_average())
        text = self.markdown()
        print("\n" + text, flush=True)
        if markdown is not None:
            markdown.write_text(text)

    def markdown(self) -> str:
        headers = ("job", "ours", "floor or peer", "ratio (median of pairs, spread)", "target")
        loaded = "; a loaded machine: absolute figures several times a quiet one's"
        lines = [
            f"**{self.title}** (`{self.command}`; {datetime.date.today().isoformat()}; "
            f"{self.loads[0]} at the start, {self.loads[-1].split(' on ')[0]} at the end"
            f"{loaded if self.timed and self._loaded() else ''})",
            "",
            "| " + " | ".join((*headers, "met")) + " |",
            "|" + "---|" * (len(headers) + 1),
        ]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def _loaded(self) -> bool:
        cpus = os.cpu_count() or 1
        return any(float(load.split()[2]) > cpus for load in self.loads)


def visidata(base: Path, keep: Path | None = None) -> str:
    """The peer's ``vd`` command: ``$VISIDATA``, else visidata installed from PyPI with pip
    into a virtualenv (``keep`` if given, reused across runs; else one under ``base``, thrown
    away with the run). pip compiles what it installs: the peer runs with its bytecode cached.
    """
    configured = os.environ.get("VISIDATA")
    if configured:
        return configured
    venv = keep if keep is not None else base / "vd-venv"
    vd = venv / "bin" / "vd"
    if not vd.exists():
        print(f"installing visidata into {venv} (pip, from PyPI)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "visidata"],
            check=True,
            stderr=subprocess.DEVNULL,
        )
    return str(vd)
