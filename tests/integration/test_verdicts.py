"""Verdicts that tell a change from noise, as a user meets them: one history, built once.

Ten runs R01..R10 of two evals of 20 tests each (R10 is the head, R09 the base):

``coin``    each test passes every other run, half of them in the even runs and half in the
            odd ones: every test passed 5 of the 10 runs, and between R09 and R10 ten tests
            go pass -> fail and ten fail -> pass. The head passes 10 tests; each test passes
            in the head with probability t/(n + 1) = 5/10 if the head were one more run like
            its earlier nine (its 4 or 5 earlier passes plus the head's): S ~ Bin(20, 1/2),
            observed 10, p = 1. Noise: ``--fail-on regression`` fails, the gate does not.
``steady``  every test passed R01..R09; in R10 tests t00..t07 fail. Each failing test passes
            with probability 9/10 under the null, the others for sure: P(all 8 fail) =
            0.1^8, two-sided p = 2e-8; Benjamini-Hochberg over the two evals: q = 2 x 2e-8
            = 4e-8. The pass rate falls from 100 % (180 of 180 earlier results) to 60 % (12
            of 20): -40 points. Regressed: the gate fails and names steady and its 8 tests,
            each with surprise (0 + 1) / (9 + 1) = 0.1.

The same build runs the project's dbt unit tests (``unit_tests`` beside each view in
models/marts/<view>.yml), which need the views' relations to exist.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from skillwalker_py import analytics

from .conftest import DbtProject
from .test_analytics import Output
from .test_cli import Cli

RUNS = [f"202602{d:02d}T090000" for d in range(1, 11)]
BASE, HEAD = RUNS[-2], RUNS[-1]
FAILING = {f"t{i:02d}" for i in range(8)}


def history() -> Output:
    out = Output()
    for r, run in enumerate(RUNS):
        for i in range(20):
            name = f"t{i:02d}"
            out.execution(run, "coin", name, "pass" if (r + i) % 2 == 0 else "fail")
            fails = run == HEAD and name in FAILING
            out.execution(run, "steady", name, "fail" if fails else "pass")
    return out


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    project = DbtProject(tmp_path_factory.mktemp("verdicts"))
    for kind, records in history().files.items():
        project.write_jsonl(f"{kind}.jsonl", records)
    cli = Cli(project)
    cli("build")
    yield cli


def test_the_gate_fails_on_the_regressed_eval_only(cli: Cli) -> None:
    gate = cli("compare", "previous", "latest", "--fail-on", "significant-regression", code=1)
    (line,) = gate.stderr.splitlines()
    assert line.startswith(
        "skillwalker-data: compare failed: steady regressed significantly (pass rate 100.0% -> "
        "60.0%, -40 points from its earlier runs ["
    )
    assert "q = 4e-08): 8 test(s) regressed (steady / t00, steady / t01, steady / t02 and 5 more)" \
        in line  # fmt: skip
    assert "coin" not in line
    # the same comparison read as RUN_ID against its previous runs (the views)
    again = cli("compare", "latest", "--fail-on", "significant-regression", code=1)
    assert again.stderr == gate.stderr


def test_any_flip_fails_the_old_gate(cli: Cli) -> None:
    proc = cli("compare", "previous", "latest", "--fail-on", "regression", code=1)
    # 10 coin tests flipped pass -> fail (the odd ones: (8 + i) even, (9 + i) odd) and 8 steady
    assert proc.stderr.startswith(
        "skillwalker-data: compare failed: 18 regressed test(s) (coin / t00, coin / t02, "
        "coin / t04 and 15 more)"
    )


def test_verdicts_in_the_json(cli: Cli) -> None:
    doc = cli.json("compare", "previous", "latest")
    summary = {s["eval"]: s for s in doc["summary"]}
    coin, steady = summary["coin"], summary["steady"]
    assert (coin["regressed"], coin["fixed"], coin["noise_flips"]) == (10, 10, 20)
    assert (coin["verdict"], coin["p_value"], coin["tests_judged"]) == ("noise", 1.0, 20)
    assert coin["pass_rate_change"] == pytest.approx(10 / 20 - 90 / 180)
    assert (steady["verdict"], steady["significant_regressions"]) == ("regressed", 8)
    assert steady["p_value"] == pytest.approx(2e-8)
    assert steady["q_value"] == pytest.approx(4e-8)
    assert steady["earlier_pass_rate"] == 1.0
    assert steady["pass_rate_change"] == pytest.approx(-0.4)
    assert steady["pass_rate_change_low"] < -0.4 < steady["pass_rate_change_high"] < 0
    # the run as a whole: 40 tests, the steady ones' drop dominates
    assert steady["run_verdict"] == coin["run_verdict"] == "regressed"
    tests = {(t["eval"], t["test_name"]): t for t in doc["tests"]}
    failing = tests[("steady", "t00")]
    assert (failing["verdict"], failing["judged_on"], failing["earlier_runs"]) == (
        "regressed", "history", 9,
    )  # fmt: skip
    assert failing["surprise"] == pytest.approx(0.1)
    # t01 passes in the runs of odd index (R02, R04, ..., R10): fixed in R10, after passing 4
    # of its 9 earlier runs; the head's pass is one of 5 passes in 10: surprise 5/10
    flip = tests[("coin", "t01")]
    assert (flip["change"], flip["verdict"], flip["earlier_passes"]) == ("fixed", "noise", 4)
    assert flip["surprise"] == pytest.approx((4 + 1) / (9 + 1))


def test_thresholds_change_the_verdict(cli: Cli) -> None:
    # a minimum effect above the 40-point drop: no regression is large enough
    cli("compare", "previous", "latest", "--fail-on", "significant-regression",
        "--min-effect", "0.5")  # fmt: skip
    # a level below q = 4e-8: not significant
    cli("compare", "previous", "latest", "--fail-on", "significant-regression",
        "--alpha", "1e-8")  # fmt: skip
    doc = cli.json("compare", "latest", "--min-effect", "0.5")  # the views' SQL, other thresholds
    assert {s["eval"]: s["verdict"] for s in doc["summary"]} == {"coin": "noise", "steady": "noise"}
    assert analytics.query_run_comparison(
        cli.project.lake_dir, BASE, HEAD, min_effect=0.4
    )["summary"][1]["verdict"] == "regressed"  # a drop of exactly the minimum effect counts


def test_bad_options_are_one_line(cli: Cli) -> None:
    for option, value in (("--max-pass-rate-drop", "5"), ("--alpha", "1.5"),
                          ("--min-effect", "-0.1")):  # fmt: skip
        proc = cli("compare", "latest", option, value, code=2)
        assert proc.stderr == (
            f"skillwalker-data compare: error: argument {option}: '{value}' is not between 0 "
            "and 1 (a fraction: 0.05 is 5 points) (see --help)\n"
        )
    same = cli("compare", "latest", HEAD, code=2)
    assert same.stderr == (
        f"skillwalker-data: error: BASE and HEAD are the same run ({HEAD}): compare needs two "
        "runs (compare RUN_ID compares a run with the previous run of each of its evals)\n"
    )


def test_the_table_shows_rates_with_intervals(cli: Cli) -> None:
    out = cli("compare", "previous", "latest").stdout
    # steady: 20 of 20 -> Wilson [83.9, 100]; 12 of 20 -> [38.7, 78.1]
    assert "100% [84\u2013100]" in out and "60% [39\u201378]" in out
    assert json.loads(cli("summaries", "--format", "json").stdout)[0]["pass_rate_low"] > 0


def test_dbt_unit_tests(cli: Cli) -> None:
    """The project's dbt unit tests (models/marts/<view>.yml) on this build's relations."""
    proc = cli.project.dbt("test", "--select", "test_type:unit")
    results = json.loads((cli.project.root / "target" / "run_results.json").read_text())
    statuses = [(r["unique_id"].split(".")[-1], r["status"]) for r in results["results"]
                if r["unique_id"].startswith("unit_test.")]  # fmt: skip
    assert len(statuses) == 25 and {s for _, s in statuses} == {"pass"}, (statuses, proc.stdout)


def test_dbt_unit_tests_keep_their_vars(cli: Cli) -> None:
    """A plain ``dbt build --vars '{flaky_window: 10}'`` (docs/analytics.md) runs the unit
    tests with those vars: the unit tests of the views that read a var pin the default
    their expected rows were worked out with (``overrides``), so another in-range value
    does not fail them (a failing unit test made dbt skip ``test_history``)."""
    other = json.dumps({"flaky_window": 3, "verdict_alpha": 0.9, "verdict_min_effect": 0.9})
    proc = cli.project.dbt("test", "--select", "test_type:unit", "--vars", other, check=False)
    results = json.loads((cli.project.root / "target" / "run_results.json").read_text())
    statuses = {r["unique_id"].split(".")[-1]: r["status"] for r in results["results"]
                if r["unique_id"].startswith("unit_test.")}  # fmt: skip
    assert len(statuses) == 25 and set(statuses.values()) == {"pass"}, (statuses, proc.stdout)
