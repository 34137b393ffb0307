"""`skillwalker-data report` opened in a real browser: headless Chromium (Debian's
``chromium``) driven by Playwright, on the sample data, on hostile data and on
an empty project.

Each report is written by the real command from a lake built by the real
`skillwalker-data build`; the browser opens it from disk with every network
request recorded. Screenshots are saved under ``tests/artifacts/report/``
(ignored by git); ``docs/report.png`` is the sample report's first screen from
there (see :func:`test_sample_report_renders_every_chart`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import forkrun
import pytest

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("skillwalker-data")
ARTIFACTS = REPO / "tests" / "artifacts" / "report"

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason="Debian's chromium is not installed (/usr/bin/chromium): apt-get install chromium",
)

PAYLOAD = (
    '<script>window.__pwned = "script"</script>'
    "<img src=x onerror=\"window.__pwned = 'img'\">"
    "\"'><svg onload=\"window.__pwned='svg'\"></svg>"
    "</script><script>window.__pwned = 'close'</script>"
)
"""Markup that runs code, or loads ``x``, if any string reaches the page unescaped."""
INJECTED_KEYS = (
    "test_name", "prompt", "result", "actual", "reasoning", "criterion", "file_content",
    "file_path", "description", "rubric_file",
)  # fmt: skip


# ----------------------------------------------------------------------------- helpers


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DO_NOT_TRACK": "1",
            "DBT_LOG_PATH": str(root / "logs"),
            "DBT_TARGET_PATH": str(root / "target"),
        }
    )
    for name in ("SKILLWALKER_LAKE_CATALOG", "SKILLWALKER_LAKE_DATA_PATH"):
        env.pop(name, None)
    return env


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = forkrun.run(
        [str(CLI), *args], env=_env(root), cwd=root, capture_output=True, text=True, timeout=900
    )
    if proc.returncode != 0:
        pytest.fail(f"skillwalker-data {args[0]} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


@dataclass
class Report:
    path: Path
    stdout: str
    stderr: str


def _report(root: Path, *args: str) -> Report:
    out = root / "report.html"
    proc = _cli(root, "report", "--lake-dir", str(root / "lake"), "--out", str(out), *args)
    return Report(out, proc.stdout, proc.stderr)


def _sample_and_build(root: Path) -> None:
    _cli(root, "sample", "--output-dir", str(root / "output"))
    _cli(root, "build", "--output-dir", str(root / "output"), "--lake-dir", str(root / "lake"))


def _inject(value: Any) -> Any:
    """Every string under an INJECTED_KEYS key gets PAYLOAD appended (lists and dicts walked)."""
    if isinstance(value, dict):
        return {
            k: (v + PAYLOAD if k in INJECTED_KEYS and isinstance(v, str) else _inject(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_inject(v) for v in value]
    return value


def _poison(output: Path) -> None:
    """Inject PAYLOAD into the sample's user strings, and add a rejected line holding it."""
    for path in output.rglob("*.jsonl"):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text(
            "".join(json.dumps(_inject(line)) + "\n" for line in lines), encoding="utf-8"
        )
    first = sorted(output.glob("runs/*/test-results.jsonl"))[0]
    with open(first, "a", encoding="utf-8") as fh:
        fh.write('{"test_run_id": "' + PAYLOAD.replace('"', "'") + "\n")


@dataclass
class Page:
    """What the browser saw of one report."""

    console: list[tuple[str, str]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


def _open(browser: Any, report: Path, seen: Page) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("console", lambda m: seen.console.append((m.type, m.text)))
    page.on("pageerror", lambda e: seen.console.append(("pageerror", str(e))))
    page.on("request", lambda r: seen.requests.append(r.url))
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    return page


def _wait_for_charts(page: Any) -> int:
    """Wait until BokehJS has rendered every chart of the page; return how many there are."""
    expected = page.locator("[data-chart]").count()
    if expected:
        page.wait_for_function(
            "n => window.Bokeh !== undefined && Object.keys(Bokeh.index).length >= n",
            arg=expected,
            timeout=30_000,
        )
        page.wait_for_timeout(300)  # the first paint after the views are built
    return int(expected)


CHART_STATE = """
() => [...document.querySelectorAll('[data-chart]')].map(div => {
  const root = div.querySelector('[data-root-id]');
  const view = root && Bokeh.index[root.dataset.rootId];
  const canvases = [];
  const walk = n => { if (n.shadowRoot) walk(n.shadowRoot);
                      for (const c of n.children || []) walk(c);
                      if (n.tagName === 'CANVAS') canvases.push(n); };
  walk(div);
  const points = view ? view.model.renderers
      .filter(r => r.data_source).map(r => r.data_source.get_length() || 0) : [];
  const intervals = view ? view.model.renderers
      .filter(r => r.data_source && r.name === 'interval')
      .map(r => r.data_source.get_length() || 0) : [];
  const named = {};
  for (const r of view ? view.model.renderers : [])
    if (r.name && r.data_source) named[r.name] = (named[r.name] || []).concat(
        [...(r.data_source.data.label || [])]);
  const legends = view ? [...view.model.center, ...view.model.right, ...view.model.below]
      .filter(a => a.items !== undefined)
      .flatMap(l => l.items.map(i => i.label.value)) : [];
  const markers = view ? view.model.renderers
      .filter(r => r.glyph && r.glyph.type === 'Scatter' && r.glyph.marker.value)
      .map(r => r.glyph.marker.value) : [];
  return {name: div.dataset.chart, rendered: Boolean(view),
          canvases: canvases.filter(c => c.width > 0 && c.height > 0).length,
          points: points.reduce((a, b) => a + b, 0),
          intervals: intervals.reduce((a, b) => a + b, 0),
          x_start: view ? view.model.x_range.start : null,
          y_start: view ? view.model.y_range.start : null,
          y_end: view ? view.model.y_range.end : null,
          named, legends, markers};
})
"""


def _coloured_pixels(png: bytes) -> int:
    """Pixels of a screenshot that are strongly coloured (glyphs; axes and text are grey)."""
    from io import BytesIO

    import numpy as np
    from PIL import Image

    rgb = np.asarray(Image.open(BytesIO(png)).convert("RGB"), dtype=np.int16).reshape(-1, 3)
    return int(((rgb.max(axis=1) - rgb.min(axis=1)) > 80).sum())


def _below_the_nav(page: Any, heading: str) -> None:
    """The heading a link scrolled to is whole, below the sticky navigation bar (it was
    under it), and near the top (the link scrolled to it)."""
    page.wait_for_timeout(200)
    nav = page.evaluate("document.querySelector('nav').getBoundingClientRect().bottom")
    top = page.evaluate(
        f"document.querySelector({json.dumps(heading)}).getBoundingClientRect().top"
    )
    assert nav <= top <= nav + 60, (heading, nav, top)


def _check_page(seen: Page) -> None:
    errors = [(kind, text) for kind, text in seen.console if kind in ("error", "pageerror")]
    assert errors == []
    assert seen.requests, "the browser recorded no request at all: the listener is broken"
    offline = [u for u in seen.requests if not u.startswith(("file://", "data:", "blob:"))]
    assert offline == []


def _shot(page: Any, name: str, **kwargs: Any) -> bytes:
    """Save a screenshot of the page from its top (element screenshots scroll it)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(200)
    png: bytes = page.screenshot(path=str(ARTIFACTS / name), **kwargs)
    return png


def _docs_screenshot(png: bytes) -> None:
    """The first screen as a small PNG (64 colours) for the README: ``docs/report.png``
    is a copy of ``tests/artifacts/report/report.png``."""
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(png)).convert("RGB")
    small = image.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(ARTIFACTS / "report.png", optimize=True)
    assert (ARTIFACTS / "report.png").stat().st_size < 150_000


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sample")
    _sample_and_build(root)
    return root


REGRESSED_RUN = "20260309T000000"


def _add_regressed_run(output: Path) -> None:
    """A run after the sample's last one, the same but for two things: every explore-agent
    test fails (7 of them passed in every earlier run: a significant regression) and
    code-review's flaky "flags sql injection" passes again (a fix within its noise)."""
    last = output / "runs" / "20260306T120500"
    new = output / "runs" / REGRESSED_RUN
    new.mkdir()
    for path in last.glob("*.jsonl"):
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line.replace("20260306T120500", REGRESSED_RUN))
            if path.name == "test-results.jsonl" and record["eval"] == "explore-agent":
                record["passed"] = False
            if path.name == "test-results.jsonl" and record["test_case"] == \
                    "code-review-flags-sql-injection":
                record["passed"] = True
            lines.append(json.dumps(record) + "\n")
        (new / path.name).write_text("".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample with hostile strings everywhere, and a significantly regressed last run."""
    root = tmp_path_factory.mktemp("hostile")
    _cli(root, "sample", "--output-dir", str(root / "output"))
    _poison(root / "output")
    _add_regressed_run(root / "output")
    _cli(root, "build", "--output-dir", str(root / "output"), "--lake-dir", str(root / "lake"))
    return root


# ----------------------------------------------------------------------------- tests


def test_sample_report_renders_every_chart(sample: Path, browser: Any) -> None:
    report = _report(sample)
    assert "report: reading judge criteria of 6 runs" in report.stderr
    assert f"wrote {report.path} (" in report.stdout
    assert "6 of 6 test runs" in report.stdout
    # the SCIL loop's train - test gap in points, as its chart's hover shows it (was +0.5)
    gaps = re.findall("Largest train \u2212 test gap ([^,]+), final gap ([^.]+)\\.",
                      report.path.read_text(encoding="utf-8"))
    assert gaps and all(re.fullmatch(r"[+-]\d+%", g) for pair in gaps for g in pair), gaps
    seen = Page()
    page = _open(browser, report.path, seen)
    charts = _wait_for_charts(page)
    # pass rate, cost, output and input tokens, duration, triggers, one SCIL and one ACIL loop
    assert charts == 8
    state = page.evaluate(CHART_STATE)
    names = [c["name"] for c in state]
    assert names[:6] == ["pass_rate", "cost", "duration", "tokens", "input_tokens", "triggers"]
    assert [n.split("-")[1] for n in names[6:]] == ["scil", "acil"]
    for chart in state:
        assert chart["rendered"], chart
        assert chart["canvases"] >= 1, chart
        assert chart["points"] > 0, chart
        png = page.locator(f'[data-chart="{chart["name"]}"]').screenshot()
        assert _coloured_pixels(png) > 200, f"{chart['name']}: no coloured glyphs drawn"
    # pass rate: 3 evals x 6 runs, a line, a marker and an interval (error bar) each
    assert state[0]["points"] == 3 * 3 * 6
    # every rate drawn with its 95 % interval: an error bar per eval and run, a line across
    # each precision and recall bar (3 skill/agent files), an error bar per loop's train and test
    # accuracy (5 SCIL iterations with a test set, 4 ACIL ones without)
    intervals = {c["name"].split("-")[0] if c["name"].startswith("loop") else c["name"]:
                 c["intervals"] for c in state}  # fmt: skip
    assert intervals["pass_rate"] == 3 * 6
    assert intervals["triggers"] == 2 * 3
    assert [c["intervals"] for c in state[6:]] == [5 + 5, 4]
    assert {c["name"]: c["intervals"] for c in state[1:5]} == dict.fromkeys(
        ["cost", "duration", "tokens", "input_tokens"], 0
    )
    by_name = {c["name"]: c for c in state}
    # a bar for every skill/agent and eval with a defined precision (recall) at the latest run:
    # the code-review skill under its own eval 100 % / 75 %; under the refactor eval its one
    # negative case has neither rate: "n/a", not nothing
    own, other = ("skill: skills/code-review/SKILL.md (code-review)",
                  "skill: skills/code-review/SKILL.md (refactor)")  # fmt: skip
    rated = {"agent: agents/explorer.md (explore-agent)", own,
             "skill: skills/refactor/SKILL.md (refactor)"}  # fmt: skip
    named = by_name["triggers"]["named"]
    assert set(named["precision"]) == set(named["recall"]) == rated
    assert named["n/a"] == [other, other]
    # axes: rates 0-100 %, money, tokens and durations from zero
    assert by_name["triggers"]["x_start"] == 0
    for chart in state:
        if chart["name"] != "triggers":
            assert chart["y_start"] == 0, chart
    for chart in [state[0], *state[6:]]:  # pass rate, loop accuracies
        assert 1 <= chart["y_end"] <= 1.1, chart
    # every eval a series of its own, in the legend, with a marker shape of its own
    for name in ("pass_rate", "cost", "duration", "tokens", "input_tokens"):
        assert by_name[name]["legends"] == ["code-review", "explore-agent", "refactor"], name
        assert len(set(by_name[name]["markers"])) == 3, name
    _docs_screenshot(_shot(page, "sample-first-screen.png"))
    _shot(page, "sample-full.png", full_page=True)

    # the latest run against the previous one: code-review's two regressions and its fix
    # are flips of flaky tests, within the noise; no significant regression
    assert page.locator("#comparison-summary tr").count() == 1 + 3
    assert page.locator('#comparison-summary tr[data-verdict="noise"]').count() == 1
    assert page.locator('table.changes[data-verdict="noise"] tr').count() == 1 + 3
    assert page.locator('table.changes[data-verdict="regressed"]').count() == 0
    assert page.locator("#glance-regressed b").inner_text() == "0"
    assert page.locator("#glance-noise b").inner_text() == "3"
    # rates in the tables with their intervals: code-review 5 of 8 in the latest run
    assert "62% [31\u201386]" in page.locator("#summaries").inner_text()
    assert page.locator("#summaries th").all_inner_texts()[-3:] == [
        "input tokens (all models)", "output tokens (all models)", "duration"
    ]  # fmt: skip
    note = page.locator("#tokens-note").inner_text()
    assert "input tokens jump when a side model appears" in note
    assert page.locator("#flaky-tests tr").count() >= 2
    assert page.locator("table.iterations td", has_text="★").count() >= 1
    assert page.locator("table.iterations td", has_text="◆").count() == 2
    assert page.locator("#rejected .empty").inner_text() == "No rejected lines."

    # drill down: summaries -> the run's section -> a test's history -> back to a run
    page.locator('#summaries a[href="#run-20260306T120500"]').first.click()
    assert page.evaluate("location.hash") == "#run-20260306T120500"
    run = page.locator("#run-20260306T120500")
    assert run.is_visible()
    _below_the_nav(page, "#run-20260306T120500 h3")
    assert run.locator("table.run-tests tr").count() == 1 + 24
    # one label per meaning: a run's tests show the main model's output tokens, a test's
    # history and the summaries every model's (469 and 489 for this test of this run)
    assert "output tokens (main model)" in run.locator("table.run-tests th").all_inner_texts()
    sql_row = run.locator("table.run-tests tr", has_text="flags sql injection")
    assert "469" in sql_row.locator("td").all_inner_texts()
    link = run.locator("table.run-tests a", has_text="flags sql injection")
    target = link.get_attribute("href")
    assert target is not None and target.startswith("#test-")
    link.click()
    history = page.locator(target)
    assert history.is_visible()
    assert history.locator("table.executions tr").count() == 1 + 6
    assert "output tokens (all models)" in history.locator("th").all_inner_texts()
    latest_row = history.locator('tr', has=page.locator('a[href="#run-20260306T120500"]'))
    assert "489" in latest_row.locator("td").all_inner_texts()
    assert history.locator("p", has_text="flaky").count() == 1
    _below_the_nav(page, f"{target} h3")
    history.locator('a[href="#run-20260301T090000"]').click()
    assert page.locator("#run-20260301T090000").is_visible()
    _below_the_nav(page, "#run-20260301T090000 h3")
    # opened from outside the page: a link to #run-<id> straight from the address bar
    page.goto(f"{report.path.as_uri()}#run-20260303T101400")
    page.wait_for_timeout(300)
    _below_the_nav(page, "#run-20260303T101400 h3")
    # the run's one infrastructure error is named with the runner's message (it was a count
    # in the run's line, and the test named nowhere); the latest run has none: no count
    broken = page.locator("#run-20260303T101400-infra tr")
    assert broken.count() == 1 + 1
    assert broken.nth(1).locator("td").all_inner_texts() == [
        "refactor", "extracts helper function", "sonnet",
        "claude CLI timed out after 600s (no output for 600s)"]
    assert page.locator("#run-20260306T120500-infra").count() == 0
    assert page.locator("#glance-infra").count() == 0
    page.goto(report.path.as_uri())
    run = page.locator("#run-20260306T120500")
    # a test's details: expectations, judge criteria and a captured file
    detail = run.locator("details.test-detail", has_text="review is actionable").first
    detail.locator("summary").first.click()
    assert detail.locator("table.criteria tr").count() >= 2
    files = run.locator("details.file")
    assert files.count() >= 1
    _check_page(seen)
    page.close()


def test_runs_option_limits_the_report(sample: Path, browser: Any) -> None:
    report = _report(sample, "--runs", "2")
    assert "2 of 6 test runs and 2 of 2 SCIL/ACIL loops; --all for more" in report.stdout
    assert "report: reading tests 2/2 runs" in report.stderr
    seen = Page()
    page = _open(browser, report.path, seen)
    _wait_for_charts(page)
    assert page.locator("section.run").count() == 2
    assert page.locator("#run-20260306T120500").count() == 1
    assert page.locator("#run-20260304T105100").count() == 0
    assert page.locator("#no-data").count() == 0
    _check_page(seen)
    page.close()
    everything = _report(sample, "--all")
    assert "6 of 6 test runs" in everything.stdout
    assert everything.path.read_text(encoding="utf-8").count('class="run"') == 6


def test_hostile_strings_never_run_nor_load(hostile: Path, browser: Any) -> None:
    report = _report(hostile)
    html = report.path.read_text(encoding="utf-8")
    assert "<script>window.__pwned" not in html
    assert "<img src=x" not in html
    seen = Page()
    page = _open(browser, report.path, seen)
    charts = _wait_for_charts(page)
    assert charts == 8
    for detail in page.locator("details").all():  # show every prompt, result, file
        detail.evaluate("d => d.open = true")
    page.wait_for_timeout(500)
    assert page.evaluate("window.__pwned") is None
    # no element made of the payload (light DOM: BokehJS draws in its own shadow roots)
    assert page.evaluate("document.querySelectorAll('img, svg, iframe, object').length") == 0
    text = page.locator("main").inner_text()
    # the markup is shown as text, in names, prompts, results, reasoning, files, rejected lines
    assert text.count('<img src=x onerror="window.__pwned') >= 10
    assert page.locator("#rejected-lines td pre", has_text="<script>").count() == 1
    assert page.locator("table.criteria td", has_text="<script>").count() >= 3
    assert page.locator("details.file pre", has_text="<script>").count() >= 1
    state = page.evaluate(CHART_STATE)
    assert all(c["rendered"] and c["points"] > 0 for c in state)
    _shot(page, "hostile-first-screen.png")
    _check_page(seen)
    page.close()


def test_significant_regressions_apart_from_noise(hostile: Path, browser: Any) -> None:
    """The last run of the hostile data set: explore-agent regressed beyond its noise (its 7
    steady tests fail), code-review's flaky test passing again is a flip within the noise."""
    report = _report(hostile)
    seen = Page()
    page = _open(browser, report.path, seen)
    _wait_for_charts(page)
    assert page.locator("#glance-significant b").inner_text() == "1"
    assert "explore-agent" in page.locator("#glance-significant").inner_text()
    assert page.locator("#glance-regressed b").inner_text() == "7"
    assert page.locator("#glance-noise b").inner_text() == "1"
    rows = page.locator("#comparison-summary tr")
    # code-review: one flip, within the noise; refactor: no flip
    assert [r.get_attribute("data-verdict") for r in rows.all()[1:]] == [
        "noise", "regressed", "unchanged"
    ]  # fmt: skip
    regressed = page.locator('table.changes[data-verdict="regressed"]')
    assert regressed.locator("tr").count() == 1 + 7
    assert set(regressed.locator("td:first-child").all_inner_texts()) == {"explore-agent"}
    noise = page.locator('table.changes[data-verdict="noise"] tr')
    assert noise.count() == 1 + 1
    assert "code-review" in noise.nth(1).inner_text()
    # the significant ones come first, apart from the noise, each under its own heading
    headings = page.locator("#latest h3").all_inner_texts()
    assert headings[0].startswith("Significant regressions") and "7" in headings[0]
    assert headings[1].startswith("Flips within noise")
    _shot(page, "verdicts.png", full_page=False)
    _check_page(seen)
    page.close()


def test_empty_project_gives_a_valid_report(tmp_path: Path, browser: Any) -> None:
    report = _report(tmp_path)
    assert "no finished build yet" in report.stdout
    html = report.path.read_text(encoding="utf-8")
    assert "Bokeh" not in html  # no chart, so no chart library either
    seen = Page()
    page = _open(browser, report.path, seen)
    assert _wait_for_charts(page) == 0
    assert "No finished build yet" in page.locator("#no-data").inner_text()
    assert page.locator("#runs .empty").inner_text() == "No test runs to show."
    _shot(page, "empty.png", full_page=True)
    _check_page(seen)
    page.close()


def test_runs_must_be_positive(tmp_path: Path) -> None:
    proc = forkrun.run(
        [str(CLI), "report", "--lake-dir", str(tmp_path / "lake"), "--runs", "0"],
        env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "skillwalker-data: error: --runs must be at least 1 (got 0); --all shows every run"
    ]
    assert not (tmp_path / "report.html").exists()


def test_artifacts_are_ignored_by_git() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    proc = subprocess.run(
        ["git", "check-ignore", "-q", str(ARTIFACTS / "x.png")], cwd=REPO, timeout=60
    )
    assert proc.returncode == 0


def test_as_of_reads_the_build_asked_for(sample: Path) -> None:
    from skillwalker_py import lake

    (build,) = lake.builds(sample / "lake")  # the sample fixture built once
    report = _report(sample, "--as-of", str(build["snapshot_id"]))
    html = report.path.read_text(encoding="utf-8")
    assert f"build snapshot {build['snapshot_id']};" in html
    proc = forkrun.run(
        [str(CLI), "report", "--lake-dir", str(sample / "lake"), "--as-of", "previous"],
        env=_env(sample), cwd=sample, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "skillwalker-data: error: the lake has no previous build (1 readable builds)"
    ]
