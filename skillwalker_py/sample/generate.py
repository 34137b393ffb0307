"""The generator: :func:`generate_sample` and the :class:`SampleSummary` it returns.

For every run, every test of every eval: its ``test-config`` line, its stream
(:mod:`~skillwalker_py.sample.streams`) as ``test-run`` lines, its output
files and its ``test-results`` rows (:mod:`~skillwalker_py.sample.results`);
then the re-evaluation of one run and its marker
(:mod:`skillwalker_py.markers`), and the SCIL/ACIL loops
(:mod:`~skillwalker_py.sample.loops`). Every line goes through the package's
writer (:mod:`skillwalker_py.jsonl`), in the per-run or single layout.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from skillwalker_py.config import build_test_case_id
from skillwalker_py.jsonl import (
    Layout,
    write_output_file,
    write_test_config,
    write_test_result,
    write_test_run_event,
)
from skillwalker_py.markers import MARKER_FILE, mark_reevaluated
from skillwalker_py.sample.corpus import Corpus
from skillwalker_py.sample.ids import DEFAULT_START, consecutive_run_ids, parse_run_id
from skillwalker_py.sample.loops import acil_loop, scil_loop
from skillwalker_py.sample.mark import (
    existing_output,
    not_written,
    read_mark,
    shown,
    write_mark,
)
from skillwalker_py.sample.results import evaluate, output_content
from skillwalker_py.sample.scenarios import EX, REEVAL_RUN, REEVAL_SCORES, TestDef
from skillwalker_py.sample.streams import Ctx, Json, Stream, build_stream
from skillwalker_py.sample.suites import eval_defs_for, plan_execution, tests_for
from skillwalker_py.types import OutputFileRecord, TestConfigRecord


@dataclass(frozen=True)
class SampleSummary:
    """What :func:`generate_sample` wrote (every count is a number of lines/files on disk)."""

    path: Path
    layout: str
    runs: int
    """Test runs (the SCIL/ACIL loops have their own run IDs, not counted here)."""
    run_ids: tuple[str, ...]
    scil_run_ids: tuple[str, ...]
    acil_run_ids: tuple[str, ...]
    reevaluated_run_ids: tuple[str, ...]
    test_configs: int
    """``test-config`` lines (one per test per run, infrastructure errors included)."""
    test_executions: int
    """Test executions, infrastructure errors included."""
    test_run_events: int
    """``test-run`` lines (stream events of every execution)."""
    result_events: int
    """``test-run`` lines with ``type == "result"`` (one per turn: two in the streams of a
    background agent, whose completion starts another turn)."""
    infrastructure_errors: int
    results_lines: int
    """``test-results`` lines, re-evaluation lines included."""
    reevaluated_results_lines: int
    """The ``test-results`` lines appended by the re-evaluation."""
    executions_without_results: int
    """Executions with no ``test-results`` line (infrastructure errors included)."""
    output_files: int
    scil_iterations: int
    acil_iterations: int
    scil_summaries: int
    acil_summaries: int
    test_run_bytes: int
    """Bytes of ``test-run`` lines."""
    total_bytes: int
    """Bytes of every file written."""

    part: str = "all"
    """What was written: ``all``, ``older`` or ``newest`` (see :func:`generate_sample`)."""

    def format(self) -> str:
        """Return the summary as the human-readable text the CLI prints."""
        mib = self.total_bytes / 2**20
        return "\n".join(
            [
                f"sample written to {self.path} (layout {self.layout}"
                + ("" if self.part == "all" else f", part {self.part}") + ")",
                f"  runs:                   {self.runs} ({self.run_ids[0]} .. {self.run_ids[-1]})",
                f"  test executions:        {self.test_executions} "
                f"({self.infrastructure_errors} infrastructure errors, "
                f"{self.executions_without_results} without results)",
                f"  test-config lines:      {self.test_configs}",
                f"  test-run lines:         {self.test_run_events} "
                f"({self.result_events} result events, "
                f"{self.test_run_bytes / 2**20:.1f} MiB)",
                f"  test-results lines:     {self.results_lines} "
                f"({self.reevaluated_results_lines} from re-evaluating "
                f"{', '.join(self.reevaluated_run_ids) or 'no run'})",
                f"  output-files lines:     {self.output_files}",
                f"  scil iterations:        {self.scil_iterations} "
                f"(runs {', '.join(self.scil_run_ids) or '-'})",
                f"  acil iterations:        {self.acil_iterations} "
                f"(runs {', '.join(self.acil_run_ids) or '-'})",
                f"  total size:             {mib:.1f} MiB",
            ]
        )


Part = Literal["all", "older", "newest"]
PARTS: tuple[Part, ...] = ("all", "older", "newest")


@dataclass
class _Counts:
    test_configs: int = 0
    result_events: int = 0
    executions: int = 0
    events: int = 0
    results: int = 0
    reeval_results: int = 0
    infra: int = 0
    without_results: int = 0
    output_files: int = 0
    test_run_bytes: int = 0
    last_moment: datetime | None = None


@dataclass
class _Reeval:
    keys: Json
    test: TestDef
    stream: Stream
    judge_score: float | None


def generate_sample(
    output_dir: str | os.PathLike[str],
    *,
    runs: int = 6,
    tests_per_eval: int = 8,
    evals: int = 3,
    seed: int = 42,
    layout: Layout = "per-run",
    payload_kb: float = 4.0,
    include_loops: bool = True,
    start: str = DEFAULT_START,
    overwrite: bool = False,
    part: Part = "all",
) -> SampleSummary:
    """Write a deterministic, realistic sample of eval output into *output_dir*.

    See :mod:`skillwalker_py.sample` for what the sample contains. *output_dir* must
    not already hold output (``runs/``, the JSONL files, the summary
    directories or the marker); with ``overwrite=True`` exactly those are
    removed first, when the sample wrote them (:mod:`.mark`): eval output of
    another writer is never removed (FileExistsError).

    ``part`` writes the sample in two steps, as a lake grows: ``older`` writes
    every test run but the newest; ``newest`` adds to that output what came
    after: the newest test run, the re-evaluation of an earlier run (and its
    marker) and the SCIL/ACIL loops. Built after each step, a lake has two
    builds; the two parts together are byte for byte the files of ``all``.
    """
    if runs < 1 or tests_per_eval < 1 or evals < 1:
        raise ValueError("runs, tests_per_eval and evals must be at least 1")
    if not payload_kb > 0:
        raise ValueError("payload_kb must be positive")
    if layout not in ("per-run", "single"):
        raise ValueError(f"unknown layout {layout!r}: expected 'per-run' or 'single'")
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}: expected one of {', '.join(PARTS)}")
    if part != "all" and runs < 2:
        raise ValueError(f"part {part!r} needs at least 2 runs (the older and the newest)")
    out = Path(output_dir)
    eval_defs = eval_defs_for(evals)
    loop_ids = 0
    if include_loops:
        loop_ids = 2 if any(ev is EX for ev in eval_defs) else 1
    try:  # before anything is deleted
        all_ids = consecutive_run_ids(start, runs + loop_ids)
    except OverflowError:
        raise ValueError(f"runs: {runs} are too many (their run IDs, from {start}, would pass "
                         "the year 9999)") from None
    options = {"runs": runs, "tests_per_eval": tests_per_eval, "evals": evals, "seed": seed,
               "layout": layout, "payload_kb": payload_kb, "include_loops": include_loops,
               "start": start}
    existing = existing_output(out)
    mark = read_mark(out)
    if part == "newest":
        if overwrite:
            raise ValueError("part 'newest' adds to the output of part 'older': no overwrite")
        _check_older_part(out, existing, all_ids[runs - 1], mark, options)
    elif existing and not overwrite:
        raise FileExistsError(
            f"{out} already holds eval output ({', '.join(p.name for p in existing)}); "
            "pass overwrite=True (--overwrite) to replace it"
        )
    elif existing and (others := ([p.name for p in existing] if mark is None
                                  else not_written(out, mark))):  # the tree walked once
        raise FileExistsError(
            f"{out} holds eval output that the sample did not write ({shown(others)}): "
            "overwrite replaces only sample output; choose another output folder, or remove "
            "it by hand"
        )
    for path in existing if part != "newest" else []:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    out.mkdir(parents=True, exist_ok=True)
    write_mark(out, options, part, done=False)

    rng = random.Random(seed)
    corpus = Corpus(rng)
    suites = [(ev, tests_for(ev, tests_per_eval, rng)) for ev in eval_defs]
    run_ids = all_ids[:runs]
    reeval_run = min(REEVAL_RUN, runs - 1)
    counts = _Counts()
    to_reevaluate: list[_Reeval] = []

    for run, run_id in enumerate(run_ids):
        if part == "older" and run == runs - 1:
            break  # the newest run and all that follows it are the other part
        # part newest draws the older runs' random numbers too, without writing them
        writing = part != "newest" or run == runs - 1
        clock = parse_run_id(run_id)
        for ev, tests in suites:
            for test in tests:
                plan = plan_execution(test, run, runs)
                keys: Json = {
                    "test_run_id": run_id,
                    "test_case": build_test_case_id(ev.name, test.name),
                    "eval": ev.name,
                    "test_name": test.name,
                }
                config: TestConfigRecord = {
                    "test_run_id": run_id,
                    "test_case": keys["test_case"],
                    "eval": ev.name,
                    "test_name": test.name,
                    "type": test.type,
                    "prompt_file": f"prompts/{keys['test_case'][len(ev.name) + 1 :]}.md",
                    "prompt": test.prompt,
                    "skill_file": ev.entity_file if ev.kind == "skill" else None,
                    "agent_file": ev.entity_file if ev.kind == "agent" else None,
                    "model": test.model,
                    "scaffold": test.scaffold,
                    "expect": list(test.expect),
                }
                if writing:
                    write_test_config(out, config, layout=layout)
                    counts.test_configs += 1
                    counts.executions += 1
                clock += timedelta(milliseconds=rng.randrange(300, 3000))
                if plan.ending == "infra":
                    event: Json = {
                        "type": "result",
                        "status": "infrastructure-error",
                        "error": "claude CLI timed out after 600s (no output for 600s)",
                    }
                    if writing:
                        run_file = _test_run_path(out, layout, run_id)
                        size_before = run_file.stat().st_size if run_file.exists() else 0
                        write_test_run_event(out, event, layout=layout, **keys)
                        counts.test_run_bytes += run_file.stat().st_size - size_before
                        counts.events += 1
                        counts.infra += 1
                        counts.result_events += 1
                        counts.without_results += 1
                    clock += timedelta(seconds=600)
                    continue
                target = int(payload_kb * 1024 * rng.uniform(0.6, 1.4))
                join = len(json.dumps(keys, ensure_ascii=False, separators=(",", ":"))) - 1
                ctx = Ctx(rng, corpus, ev, test, plan, run, target, join)
                outputs = [(p, output_content(p, ctx)) for p in test.outputs]
                stream = build_stream(ctx, outputs)
                if writing:
                    run_file = _test_run_path(out, layout, run_id)
                    size_before = run_file.stat().st_size if run_file.exists() else 0
                    for event in stream.events:
                        write_test_run_event(out, event, layout=layout, **keys)
                    counts.test_run_bytes += run_file.stat().st_size - size_before
                    counts.events += len(stream.events)
                    counts.result_events += sum(e.get("type") == "result" for e in stream.events)
                clock += timedelta(milliseconds=stream.duration_ms)
                for rel_path, content in outputs if writing else []:
                    record: OutputFileRecord = {
                        "test_run_id": run_id,
                        "test_case": keys["test_case"],
                        "eval": ev.name,
                        "test_name": test.name,
                        "file_path": rel_path,
                        "file_content": content,
                    }
                    write_output_file(out, record, layout=layout)
                    counts.output_files += 1
                if not plan.write_results:
                    if writing:
                        counts.without_results += 1
                    continue
                at = clock + timedelta(milliseconds=rng.randrange(200, 1500))
                rows = evaluate(keys, test, stream, plan.judge_score, at, rng)
                for row in rows if writing else []:
                    write_test_result(out, row, layout=layout)
                    counts.results += 1
                done = at + timedelta(seconds=10)
                if counts.last_moment is None or done > counts.last_moment:
                    counts.last_moment = done
                if run == reeval_run:
                    judge_score = plan.judge_score
                    if test.scenario == "reeval":
                        judge_score = REEVAL_SCORES[1]
                    to_reevaluate.append(_Reeval(keys, test, stream, judge_score))

    # Re-evaluation: after every run, results of one run are evaluated again.
    reevaluated: tuple[str, ...] = ()
    if part != "older" and to_reevaluate and counts.last_moment is not None:
        at = counts.last_moment + timedelta(hours=2)
        for item in to_reevaluate:
            at += timedelta(milliseconds=rng.randrange(500, 4000))
            rows = evaluate(item.keys, item.test, item.stream, item.judge_score, at, rng)
            for row in rows:
                write_test_result(out, row, layout=layout)
            counts.reeval_results += len(rows)
        reevaluated = (run_ids[reeval_run],)
        mark_reevaluated(out, reevaluated)

    scil_ids: tuple[str, ...] = ()
    acil_ids: tuple[str, ...] = ()
    scil_iterations = acil_iterations = 0
    if include_loops and part != "older":
        scil_ids = (all_ids[runs],)
        scil_iterations = scil_loop(out, layout, scil_ids[0], rng)
        if loop_ids == 2:
            acil_ids = (all_ids[runs + 1],)
            acil_iterations = acil_loop(out, layout, acil_ids[0], rng)

    write_mark(out, options, "older" if part == "older" else "all", done=True)
    total = sum(p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file())
    written = {"all": run_ids, "older": run_ids[:-1], "newest": run_ids[-1:]}[part]
    return SampleSummary(
        path=out,
        layout=layout,
        runs=len(written),
        run_ids=tuple(written),
        scil_run_ids=scil_ids,
        acil_run_ids=acil_ids,
        reevaluated_run_ids=reevaluated,
        test_configs=counts.test_configs,
        test_executions=counts.executions,
        test_run_events=counts.events,
        result_events=counts.result_events,
        infrastructure_errors=counts.infra,
        results_lines=counts.results + counts.reeval_results,
        reevaluated_results_lines=counts.reeval_results,
        executions_without_results=counts.without_results,
        output_files=counts.output_files,
        scil_iterations=scil_iterations,
        acil_iterations=acil_iterations,
        scil_summaries=len(scil_ids),
        acil_summaries=len(acil_ids),
        test_run_bytes=counts.test_run_bytes,
        total_bytes=total,
        part=part,
    )


def _check_older_part(out: Path, existing: list[Path], newest_run: str,
                      mark: dict[str, Any] | None, options: dict[str, Any]) -> None:
    """Part ``newest`` adds to the output of part ``older`` written with the same options:
    what it writes must not be there, the older runs must, and nothing else (:mod:`.mark`)."""
    if mark is not None and mark.get("part") == "older" and mark.get("options") != options:
        _refuse_other_options(out, mark, options)  # first: a fewer --runs names an older run
    names = {p.name for p in existing}
    later = names & {MARKER_FILE, "scil-summary", "acil-summary"}
    if (out / "runs" / newest_run).exists():
        later.add(f"runs/{newest_run}")
    if later:
        raise FileExistsError(
            f"{out} already holds the newest part of the sample ({', '.join(sorted(later))}); "
            "write part 'older' first (with overwrite)"
        )
    if not names:
        raise FileNotFoundError(
            f"{out} holds no eval output: part 'newest' adds to the output of part 'older'"
        )
    others = sorted(names) if mark is None else not_written(out, mark)
    if others:
        raise FileExistsError(
            f"{out} holds eval output that the sample did not write ({shown(others)}): part "
            "'newest' adds only to the sample's part 'older'"
        )
    assert mark is not None
    if mark.get("part") != "older":  # other options of part 'older' were refused first
        _refuse_other_options(out, mark, options)


def _refuse_other_options(out: Path, mark: dict[str, Any], options: dict[str, Any]) -> None:
    given = mark.get("options")
    older: dict[str, Any] = given if isinstance(given, dict) else {}
    differ = [f"{key} {older.get(key)!r} (here {value!r})" for key, value in options.items()
              if older.get(key) != value] if mark.get("part") == "older" else []
    what = (f"part 'older' written with other options: {', '.join(differ)}" if differ
            else "no part 'older' of this version")
    raise ValueError(f"{out} holds {what}; write part 'older' with the options of part "
                     "'newest' first (with overwrite)")


def _test_run_path(out: Path, layout: Layout, run_id: str) -> Path:
    if layout == "per-run":
        return out / "runs" / run_id / "test-run.jsonl"
    return out / "test-run.jsonl"
