"""The core install (``pip install skillwalker-data``: PyYAML only) gives the helper
library; dbt, DuckDB, Bokeh and psycopg come with the extras (pyproject.toml).

The helper modules are imported in a venv of their own (no pip, no site-packages of
this one) that sees the package's source and PyYAML only; importing duckdb there fails,
so the imports cannot pass by borrowing this environment's packages."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import yaml

from skillwalker_py.command import EXTRAS, missing_extra

REPO = Path(__file__).resolve().parents[2]
HELPERS = ["config", "stream", "jsonl", "split", "phase", "prompts", "frontmatter",
           "markers", "runid", "errors", "types", "rates"]  # fmt: skip
HEAVY = ["duckdb", "dbt", "bokeh", "numpy", "jinja2", "psycopg", "tqdm", "pytz"]


def test_the_core_install_depends_on_pyyaml_only() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["dependencies"] == ["PyYAML>=6"]
    extras = project["optional-dependencies"]
    assert {"build", "report", "team", "all", "dev"} <= set(extras)
    assert "skillwalker-data[all]" in extras["dev"]  # what make install installs
    # each module the command names comes with the extra it names
    distribution = {"duckdb": "duckdb==", "dbt": "dbt-core", "pytz": "pytz", "tqdm": "tqdm",
                    "bokeh": "bokeh", "jinja2": "Jinja2", "numpy": "numpy",
                    "psycopg": "psycopg[binary]"}  # fmt: skip
    for module, extra in EXTRAS.items():
        wanted = distribution.get(module, module.replace("_", "-") + "==")
        assert any(req.startswith(wanted) for req in extras[extra]), (module, extra)


def test_the_helper_modules_import_with_the_core_install_alone(tmp_path: Path) -> None:
    env_dir = tmp_path / "core"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    deps = tmp_path / "deps"
    deps.mkdir()
    (deps / "yaml").symlink_to(Path(yaml.__file__).parent)
    (site / "core.pth").write_text(f"{REPO}\n{deps}\n", encoding="utf-8")
    script = (
        "import importlib, sys\n"
        f"for name in {HELPERS!r}:\n"
        "    importlib.import_module('skillwalker_py.' + name)\n"
        "import skillwalker_py\n"
        "assert skillwalker_py.build_test_case_id('a', 'b c') == 'a-b-c'\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print('loaded', heavy)\n"
        "try:\n"
        "    import duckdb\n"
        "except ModuleNotFoundError:\n"
        "    print('no duckdb')\n"
    )
    proc = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                          cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["loaded []", "no duckdb"]
    # the command, in that venv, names the extra to install in one line
    proc = subprocess.run([str(python), "-c",
                           "import sys; from skillwalker_py.command import main; sys.exit(main())",
                           "summaries"], capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == ("skillwalker-data: error: this needs duckdb, which the core install "
                           "leaves out: pip install 'skillwalker-data[build]' (or [all])\n")


def test_a_missing_module_of_no_extra_is_not_hidden() -> None:
    assert missing_extra(ModuleNotFoundError("x", name="bokeh.plotting")) is not None
    assert missing_extra(ModuleNotFoundError("x", name="skillwalker_py.nope")) is None
    assert sys.modules.get("skillwalker_py.command") is not None
