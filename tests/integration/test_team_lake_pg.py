"""A team's lake: a PostgreSQL catalog and a shared data folder, written by builds at once.

The module starts a throwaway PostgreSQL 15 cluster on loopback (as the
``postgres`` user when the tests run as root: the server refuses root) and
removes it afterwards. Two ``skillwalker-data build`` processes, each with its
own output folder (as two machines would have), write one lake (catalog in
PostgreSQL, Parquet in one shared folder) at the same time while readers
query it in a loop; before them, the first build on the new lake is killed
with SIGKILL mid-way and another machine builds its own folder to its end (it
must undo the killed build's commits and show none of them); then the killed
machine builds again, at once with a third one.

Expected values, from the sample generator's rules (``skillwalker_py.sample``):
``runs=2, evals=2, tests_per_eval=2`` gives two test runs of 4 test
executions each (every test of every eval), one SCIL and one ACIL loop run;
each team member's sample starts at another date, so run IDs never collide.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import forkrun
import pytest
from reliability._harness import Project, Running, cleaned_up, in_background

from skillwalker_py import lake
from skillwalker_py.sample import SampleSummary, generate_sample

PG_BIN = Path("/usr/lib/postgresql/15/bin")
EXECUTIONS_PER_RUN = 4  # evals=2 x tests_per_eval=2
MODEL_COMMITTED = "OK created sql incremental model main.test_config"
WAITING = "waiting for another build of the team lake"
SECRET = "Hunter2-team-lake"
CLI = Path(sys.executable).with_name("skillwalker-data")
REPO = Path(__file__).resolve().parents[2]


def _pg_bin() -> Path | None:
    if (PG_BIN / "initdb").is_file():
        return PG_BIN
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


@dataclass
class Postgres:
    """A throwaway PostgreSQL cluster on 127.0.0.1:<port>, trust authentication."""

    bin: Path
    port: int
    as_postgres: list[str]

    def psql(self, sql: str, dbname: str = "postgres", user: str = "postgres") -> str:
        return subprocess.run(
            [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", user,
             "-d", dbname, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
            check=True, capture_output=True, text=True, timeout=60,
        ).stdout  # fmt: skip

    def catalog(self, dbname: str, user: str = "postgres") -> str:
        return f"postgres:dbname={dbname} host=127.0.0.1 port={self.port} user={user}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    bin_dir = _pg_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binary (initdb) on this machine")
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    root = Path(tempfile.mkdtemp(prefix="skillwalker-pg-"))
    if as_postgres:
        shutil.chown(root, "postgres")
    data, port = root / "data", _free_port()
    subprocess.run([*as_postgres, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust",
                    "-U", "postgres", "--no-sync"],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    options = (f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={root} "
               "-c fsync=off")  # fmt: skip
    subprocess.run([*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options,
                    "-l", str(root / "server.log"), "-w", "start"],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    try:
        yield Postgres(bin_dir, port, as_postgres)
    finally:
        subprocess.run([*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data), "-m",
                        "immediate", "-w", "stop"], capture_output=True, timeout=120)  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Member:
    """A team member's machine: its own output folder and dbt target; the shared lake."""

    project: Project
    sample: SampleSummary

    @property
    def runs(self) -> set[str]:
        return set(self.sample.run_ids)

    def build(self) -> Running:
        return self.project.start(cli=True)


@dataclass
class Reader:
    """Reads the last finished build in a loop; records what each read saw."""

    config: lake.LakeConfig
    expected_results: dict[str, int]
    seen: list[tuple[int, frozenset[str]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    half_done: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def read_once(self) -> None:
        con = lake.connect(self.config)
        if con is None:
            return
        try:
            (snapshot,) = con.execute("select id from lake.current_snapshot()").fetchone() or (0,)
            counts = {
                table: dict(con.execute(
                    f"select test_run_id, count(*) from {table} group by all").fetchall())
                for table in ("test_run", "test_config", "test_results")
            }  # fmt: skip
            summaries = dict(con.execute(
                "select test_run_id, sum(total_tests + infrastructure_errors) "
                "from test_run_summaries group by all").fetchall())  # fmt: skip
        finally:
            con.close()
        runs = frozenset(counts["test_run"])
        for run in runs | set(counts["test_config"]) | set(counts["test_results"]):
            got = (counts["test_run"].get(run), counts["test_config"].get(run),
                   counts["test_results"].get(run), summaries.get(run))  # fmt: skip
            want = (EXECUTIONS_PER_RUN, EXECUTIONS_PER_RUN, self.expected_results[run],
                    EXECUTIONS_PER_RUN)  # fmt: skip
            if got != want:
                self.half_done.append(f"snapshot {snapshot}, run {run}: {got} != {want}")
        self.seen.append((int(snapshot), runs))

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.read_once()
            except Exception as exc:  # every error is a failure of the guarantee
                self.errors.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.05)


def _expected_results(sample_output: Path) -> dict[str, int]:
    """Expectations per run: distinct (test case, index) of its results file (a re-evaluated
    run's file holds two evaluations; the lake keeps the latest)."""
    out: dict[str, int] = {}
    for results in sample_output.glob("runs/*/test-results.jsonl"):
        con = duckdb.connect()
        try:
            row = con.execute(
                "select count(distinct (test_case, expect_index)) from read_json(?, "
                "format = 'newline_delimited')", [str(results)]).fetchone()  # fmt: skip
        finally:
            con.close()
        out[results.parent.name] = int(row[0]) if row else 0
    return out


@dataclass
class Team:
    postgres: Postgres
    config: lake.LakeConfig
    members: list[Member]
    codes: list[int]
    """Exit codes: the other machine's build after the kill, then the two built at once."""
    outputs: list[str]
    killed_while_running: bool
    after_kill: frozenset[str]
    head_after_kill: frozenset[str]
    after_other: frozenset[str]
    """Runs in test_run that readers saw after the other machine's build."""
    config_after_other: frozenset[str]
    head_after_other: frozenset[str]
    readers: list[Reader]

    @property
    def undone(self) -> bool:
        """The other machine's build began by undoing what the killed build committed."""
        return "undoing what an unfinished build committed" in self.outputs[0]


def _new_lake(
    postgres: Postgres, tmp_path_factory: pytest.TempPathFactory, dbname: str,
    starts: dict[str, str],
) -> tuple[lake.LakeConfig, list[Member]]:
    """A new team lake (catalog database ``dbname``, one shared data folder, as a network
    file system would be) and one member per name: an output folder with a sample of two
    runs starting at its date, the lake named by the environment."""
    postgres.psql(f"create database {dbname}")
    shared = tmp_path_factory.mktemp(f"{dbname}-shared") / "lake-data"
    config = lake.LakeConfig(postgres.catalog(dbname), f"{shared}/")
    env = {"SKILLWALKER_LAKE_CATALOG": config.catalog,
           "SKILLWALKER_LAKE_DATA_PATH": config.data_path}  # fmt: skip
    members = []
    for name, start in starts.items():
        project = Project(tmp_path_factory.mktemp(name), extra_env=env)
        sample = generate_sample(project.output_dir, runs=2, evals=2, tests_per_eval=2,
                                 payload_kb=1, start=start)  # fmt: skip
        members.append(Member(project, sample))
    return config, members


@pytest.fixture(scope="module")
def team(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Team:
    """Ada's first build of the new lake is killed once it has committed a table; Bob
    (another machine) builds his own folder to its end; then Ada and Cy build at once.
    Readers read the lake in a loop throughout."""
    config, members = _new_lake(postgres, tmp_path_factory, "team_lake", {
        "ada": "20260301T090000", "bob": "20260401T090000", "cy": "20260501T090000"})
    ada, bob, cy = members
    # Bob's catalog string holds a password (trust authentication accepts any): no output,
    # log or artefact of his may show it (test_no_output_log_or_artefact_shows_the_password)
    bob.project.extra_env = {**bob.project.extra_env,
                             "SKILLWALKER_LAKE_CATALOG": f"{config.catalog} password={SECRET}"}
    bob.project.dbt_log = True
    expected: dict[str, int] = {}
    for m in members:
        expected.update(_expected_results(m.project.output_dir))
    readers = [Reader(config, expected) for _ in range(2)]
    with in_background(readers):
        killed = ada.build()
        with cleaned_up(killed):
            assert killed.wait_for(MODEL_COMMITTED, timeout=600), killed.output()[-3000:]
            killed_while_running = killed.kill()
        after = _runs(lake.connect(config))
        head = _runs(lake.open_instance(config, lake.ALIAS), "test_config")
        code, out = bob.project.run_build(cli=True, check=False)
        after_other = _runs(lake.connect(config))
        config_after_other = _runs(lake.connect(config), "test_config")
        head_after_other = _runs(lake.open_instance(config, lake.ALIAS), "test_config")
        builds = [ada.build(), cy.build()]
        with cleaned_up(*builds):
            codes = [code] + [b.wait(timeout=600) for b in builds]
        outputs = [out] + [b.output() for b in builds]
        time.sleep(0.5)
    return Team(postgres, config, members, codes, outputs, killed_while_running, after, head,
                after_other, config_after_other, head_after_other, readers)


def _runs(con: duckdb.DuckDBPyConnection | None, table: str = "test_run") -> frozenset[str]:
    if con is None:
        return frozenset()
    try:
        return frozenset(r for (r,) in con.execute(
            f"select distinct test_run_id from {lake.ALIAS}.main.{table}").fetchall())  # fmt: skip
    finally:
        con.close()


def test_two_builds_at_once_land_every_run_exactly_once(team: Team) -> None:
    assert team.codes == [0, 0, 0], [o[-3000:] for o in team.outputs]
    con = lake.connect(team.config)
    assert con is not None
    try:
        per_run = dict(con.execute("select test_run_id, count(*) from test_run group by all")
                       .fetchall())  # fmt: skip
        doubled = con.execute(
            "select test_run_id, test_case, count(*) from test_run group by all "
            "having count(*) > 1").fetchall()  # fmt: skip
        loops = {r for (r,) in con.execute(
            "select test_run_id from scil_summary union all "
            "select test_run_id from acil_summary").fetchall()}  # fmt: skip
    finally:
        con.close()
    everyone = set().union(*(m.runs for m in team.members))
    assert per_run == dict.fromkeys(everyone, EXECUTIONS_PER_RUN)
    assert doubled == []
    assert loops == {r for m in team.members
                     for r in (*m.sample.scil_run_ids, *m.sample.acil_run_ids)}  # fmt: skip
    # builds of a team lake take turns (the table lock): the two started together never
    # raced (a lost race would fail a build: nothing builds again), and one of them said
    # it waited for the other
    assert sum(WAITING in out for out in team.outputs[1:]) == 1, [o[-3000:] for o in team.outputs]


def test_readers_never_saw_an_error_or_half_a_build(team: Team) -> None:
    for reader in team.readers:
        assert reader.errors == []
        assert reader.half_done == []
        assert len(reader.seen) >= 5, "the readers did not read during the builds"
    # the readers saw the lake grow: from no run to every run
    seen = {runs for r in team.readers for _snapshot, runs in r.seen}
    assert max(seen, key=len) == set().union(*(m.runs for m in team.members))


def test_a_killed_build_leaves_nothing_half_done(team: Team) -> None:
    ada = team.members[0]
    assert team.killed_while_running
    assert team.head_after_kill == ada.runs, "the build was killed before it committed a table"
    assert team.after_kill == set()  # readers kept the last finished build: none yet
    # Ada's next build imported what the killed one missed: every run once (first test)
    assert team.codes[1] == 0, team.outputs[1][-3000:]


def test_a_build_killed_on_one_machine_shows_nothing_in_anothers_build(team: Team) -> None:
    bob = team.members[1]
    # Bob's build began by undoing what Ada's killed build had committed ...
    assert team.codes[0] == 0, team.outputs[0][-3000:]
    assert team.undone, team.outputs[0][-3000:]
    # ... so its finished build holds his runs only: none of Ada's in test_config either
    assert team.config_after_other == bob.runs
    assert team.after_other == bob.runs
    assert team.head_after_other == bob.runs


def test_a_read_only_role_reads_and_cannot_write(team: Team) -> None:
    pg = team.postgres
    pg.psql("create role lake_reader login")
    pg.psql("grant connect on database team_lake to lake_reader")
    pg.psql("grant usage on schema public to lake_reader; "
            "grant select on all tables in schema public to lake_reader", dbname="team_lake")
    reader = lake.LakeConfig(pg.catalog("team_lake", user="lake_reader"), team.config.data_path)
    assert _runs(lake.connect(reader)) == set().union(*(m.runs for m in team.members))
    con = duckdb.connect()
    try:
        lake.load_extensions(con, reader.catalog)
        con.execute(reader.attach_sql("writer", read_only=False))
        with pytest.raises(duckdb.Error, match="permission denied"):
            con.execute("create table writer.main.not_allowed (x INTEGER)")
    finally:
        con.close()


def _cli(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return forkrun.run([str(CLI), *args], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=600, stdin=subprocess.DEVNULL)  # fmt: skip


def test_no_output_log_or_artefact_shows_the_password(team: Team) -> None:
    """A password in SKILLWALKER_LAKE_CATALOG was printed on the build's last line, and
    DuckDB's errors print the connection string: Bob's build (dbt's output with
    --verbose, its debug log, its target folder), the read commands, and commands that
    fail on the catalog (DuckDB's and libpq's errors) never show it."""
    bob = team.members[1]
    assert team.codes[0] == 0, team.outputs[0][-3000:]
    env, root = bob.project.env(), bob.project.root
    shown = {"bob's build": team.outputs[0]}
    for args in (["build"], ["builds"], ["attach"], ["summaries"]):
        proc = _cli(env, *args, cwd=root)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        shown[" ".join(args)] = proc.stdout + proc.stderr
    assert f"readers see this build in postgres:{team.config.catalog.split(':', 1)[1]}" in \
        team.outputs[0]  # the lake is named, its password is not
    missing = {**env, "SKILLWALKER_LAKE_CATALOG": env["SKILLWALKER_LAKE_CATALOG"].replace(
        "dbname=team_lake", "dbname=no_such_lake")}
    for args in (["build"], ["summaries"]):
        proc = _cli(missing, *args, cwd=root)
        assert proc.returncode != 0 and "no_such_lake" in proc.stderr, proc.stderr
        shown["failing " + " ".join(args)] = proc.stdout + proc.stderr
    files = [p for folder in ("target", "logs") for p in (root / folder).rglob("*") if p.is_file()]
    assert any(p.name == "dbt.log" for p in files) and any(p.name == "run_results.json"
                                                            for p in files)
    leaks = [what for what, text in shown.items() if SECRET in text]
    leaks += [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert leaks == []


_HOLD_TEAM_LOCK = """
import sys, time
from skillwalker_py import lake
from skillwalker_py.pipeline import lock, team_lock
config = lake.LakeConfig(sys.argv[1], "/unused/")
lock.hold(config, timeout=0)
conn = team_lock._HELD[team_lock.conninfo(config.catalog)]
print(" ".join(str(conn.execute(f"show {name}").fetchone()[0]) for name in sys.argv[2:]),
      flush=True)
time.sleep(600)
"""
_SESSION = ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count",
            "tcp_user_timeout", "idle_in_transaction_session_timeout")


def test_a_build_waits_for_the_lock_as_long_as_its_timeout_once(team: Team) -> None:
    """SKILLWALKER_LOCK_TIMEOUT=10 was waited three times (fails after 36.9 s): measured from
    the build's "waiting" line to its exit, a timeout of 4 s is waited once (from 80 % of
    it to less than two waits). The lock's session asks the server to probe a silent
    client after 60 s (a machine that sleeps holds it ~90 s)."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_TEAM_LOCK, team.config.catalog,
                               *_SESSION], stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().split() == ["60", "10", "3", "60000", "0"]
        cy = team.members[2]
        build = forkrun.popen(
            [str(CLI), "build"], env={**cy.project.env(), "SKILLWALKER_LOCK_TIMEOUT": "4"},
            cwd=cy.project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert build.stderr is not None
        said = build.stderr.readline()
        waiting_from = time.monotonic()
        code = build.wait(timeout=120)
        waited = time.monotonic() - waiting_from
        rest = build.stderr.read()
        build.stderr.close()
        assert build.stdout is not None
        build.stdout.close()
    finally:
        holder.kill()
        holder.wait()
    assert WAITING in said and "waiting up to 4 s" in said, said
    assert f"(skillwalker build pid {holder.pid} on " in said
    assert code == 1 and "waited 4 s" in rest, rest
    assert 3.2 <= waited < 8.0, waited


def test_a_read_only_role_can_neither_take_nor_hold_off_the_build_lock(team: Team) -> None:
    """A reader's `select pg_try_advisory_lock(...)` held every build off. The lock is now
    one only a role that may write the lock's table can take; what a reader may take
    (ACCESS SHARE: a SELECT, a pg_dump) does not conflict with it."""
    pg = team.postgres
    pg.psql("create role lock_reader login")
    pg.psql("grant connect on database team_lake to lock_reader")
    pg.psql("grant usage on schema public to lock_reader; "
            "grant select on all tables in schema public to lock_reader", dbname="team_lake")
    with pytest.raises(subprocess.CalledProcessError) as refused:
        pg.psql("begin; lock table skillwalker_build_lock in exclusive mode nowait; commit",
                dbname="team_lake", user="lock_reader")
    assert "permission denied for table skillwalker_build_lock" in refused.value.stderr
    reading = subprocess.Popen(
        [str(pg.bin / "psql"), "-h", "127.0.0.1", "-p", str(pg.port), "-U", "lock_reader",
         "-d", "team_lake", "-qAt", "-c", "begin; lock table skillwalker_build_lock in access "
         "share mode; select 'locked', pg_sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while pg.psql("select count(*) from pg_locks where granted and mode = "
                      "'AccessShareLock' and relation = 'skillwalker_build_lock'::regclass",
                      dbname="team_lake").strip() != "1":
            assert time.monotonic() < deadline and reading.poll() is None
            time.sleep(0.1)
        taken = subprocess.run(
            [sys.executable, "-c", "import sys; from skillwalker_py import lake; from "
             "skillwalker_py.pipeline import lock; print(lock.hold(lake.LakeConfig(sys.argv[1], "
             "'/unused/'), timeout=0))", team.config.catalog],
            capture_output=True, text=True, timeout=120)  # fmt: skip
    finally:
        reading.kill()
        reading.wait()
    assert taken.stdout == "acquired\n", taken.stderr
    cy = team.members[2]
    as_reader = {**cy.project.env(),
                 "SKILLWALKER_LAKE_CATALOG": pg.catalog("team_lake", user="lock_reader")}
    proc = _cli(as_reader, "build", "--force", cwd=cy.project.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith("skillwalker-data: build failed after "), proc.stderr
    assert ("the role lock_reader may not build the team lake dbname=team_lake "
            "host=127.0.0.1") in proc.stderr
    assert "build with a role that may write it (docs/team-lake.md: the builder role)" in \
        proc.stderr and proc.stderr.count("\n") == 1


def test_attach_gives_a_reader_every_line_a_plain_duckdb_needs(
    team: Team, tmp_path: Path
) -> None:
    """docs/team-lake.md's setup: `skillwalker-data attach` with the reader's variables
    prints the lines a DuckDB session that may not download an extension runs to read the
    last finished build (the PostgreSQL extension loaded too)."""
    pg = team.postgres
    pg.psql("do $$ begin create role attach_reader login; exception when duplicate_object "
            "then null; end $$")
    pg.psql("grant connect on database team_lake to attach_reader")
    pg.psql("grant usage on schema public to attach_reader; "
            "grant select on all tables in schema public to attach_reader", dbname="team_lake")
    catalog = pg.catalog("team_lake", user="attach_reader")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLWALKER_")}
    env.update({"SKILLWALKER_LAKE_CATALOG": catalog,
                "SKILLWALKER_LAKE_DATA_PATH": team.config.data_path})  # fmt: skip
    proc = forkrun.run([str(Path(sys.executable).with_name("skillwalker-data")), "attach"],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["LOAD", "LOAD", "LOAD", "SET", "ATTACH",
                                                   "USE"]
    assert lines[2].endswith("/postgres_scanner.duckdb_extension';")
    assert lines[4].startswith(f"ATTACH 'ducklake:{catalog}' AS lake (READ_ONLY, ")
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False,
                                 "extension_directory": str(tmp_path / "none")})  # fmt: skip
    try:
        for line in lines:
            con.execute(line)
        runs = {r for (r,) in con.execute("select distinct test_run_id from per_test").fetchall()}
    finally:
        con.close()
    assert runs == set().union(*(m.runs for m in team.members))


def _vars_and_version_refusal(stderr: str) -> tuple[str, str]:
    """The lake's side and this build's side of a refused build's one line."""
    assert stderr.count("\n") == 1, stderr
    head = "skillwalker-data: error: build refused: the team lake's views were built by "
    assert stderr.startswith(head), stderr
    theirs, ours = stderr[len(head):].split("; this build is ", 1)
    assert ours.endswith(": it would replace every view for every reader. Build with the "
                         "lake's version and vars, or pass --replace-views to replace them "
                         "on purpose (docs/team-lake.md: what a team keeps equal)\n"), ours
    return theirs, ours.split(": it would replace", 1)[0]


def _project_copy(dest: Path) -> Path:
    """The dbt project's files (what its version is made of), copied."""
    dest.mkdir()
    for name in ("dbt_project.yml", "profiles.yml"):
        shutil.copy2(REPO / name, dest / name)
    for folder in ("models", "macros", "seeds", "tests/generic"):
        shutil.copytree(REPO / folder, dest / folder)
    return dest


def test_a_build_with_other_vars_or_another_version_is_refused(
    team: Team, tmp_path: Path
) -> None:
    """A teammate's build with `flaky_window: 7`, or of a checkout whose model differs by a
    comment, replaced all the views for every reader (and the next plain build replaced
    them back). It is refused before dbt starts, with one line naming both sides; the lake
    is left as it was."""
    cy = team.members[2]
    before = lake.builds(team.config)
    recorded = before[0]["project_version"]
    assert recorded.startswith("skillwalker-data ") and " (project files " in recorded
    assert before[0]["view_vars"] == "{}"
    proc = _cli(cy.project.env(), "build", "--vars", "{flaky_window: 7}", cwd=cy.project.root)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""  # nothing built: not even the first line
    theirs, ours = _vars_and_version_refusal(proc.stderr)
    assert theirs.startswith(f"{recorded}, vars {{}} (the project's defaults) (last such build: "
                             f"{before[0]['build_id'][:8]} by "), theirs
    assert ours == f'{recorded}, vars {{"flaky_window": 7}}'
    # another version: the same vars, a model that differs by one comment
    other = _project_copy(tmp_path / "checkout")
    model = other / "models" / "marts" / "per_test.sql"
    model.write_text(model.read_text(encoding="utf-8") + "\n-- another version\n",
                     encoding="utf-8")
    env = {**cy.project.env(), "SKILLWALKER_PROJECT_DIR": str(other)}
    proc = _cli(env, "build", cwd=cy.project.root)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    theirs, ours = _vars_and_version_refusal(proc.stderr)
    assert theirs.startswith(f"{recorded}, vars {{}} (the project's defaults)"), theirs
    files = recorded.split(" (project files ", 1)[1][:12]
    assert ours.startswith("skillwalker-data ") and ours.endswith(
        ", vars {} (the project's defaults)"), ours
    assert " (project files " in ours and files not in ours
    assert ours.split(" (project files ")[0] == recorded.split(" (project files ")[0]
    assert lake.builds(team.config) == before


def test_builds_name_the_machine_and_the_user_of_each_build(team: Team) -> None:
    """`builds` did not say which machine or user ran a build."""
    machine, user = os.uname().nodename, pwd.getpwuid(os.getuid()).pw_name
    bob = team.members[1]
    listed = lake.builds(team.config)
    assert len(listed) >= 3  # Bob's, then Ada's and Cy's (the killed build never finished)
    assert {(b["hostname"], b["os_user"]) for b in listed} == {(machine, user)}
    proc = _cli(bob.project.env(), "builds", cwd=bob.project.root)
    assert proc.returncode == 0, proc.stderr
    header, _rule, *rows = proc.stdout.splitlines()
    assert header.split()[-2:] == ["host", "user"]
    assert len(rows) == len(listed)
    assert all(row.split()[-2:] == [machine, user] for row in rows), proc.stdout


DOCS = REPO / "docs" / "team-lake.md"
BACKUP_SECTION = "## Backing up and restoring a team's lake\n"


def _doc_blocks() -> list[str]:
    """The ``sh`` blocks of docs/team-lake.md's backup section, in order: the settings,
    the backup, the restore, the check."""
    section = DOCS.read_text(encoding="utf-8").split(BACKUP_SECTION, 1)[1].split("\n## ")[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.S)


@dataclass
class Restored:
    config: lake.LakeConfig
    backup: Path
    steps: list[subprocess.CompletedProcess[str]]
    env: dict[str, str]
    """The restored lake's variables, as the check block sets them."""


@pytest.fixture(scope="module")
def restored(team: Team, tmp_path_factory: pytest.TempPathFactory) -> Restored:
    """The team lake backed up and restored into a new database and data folder by the
    documented blocks, run as written with this test's values of their settings."""
    pg = team.postgres
    pg.psql("do $$ begin create role skillwalker_builder login; exception when "
            "duplicate_object then null; end $$")
    root = tmp_path_factory.mktemp("backup")
    catalog = f"dbname=restored_lake host=127.0.0.1 port={pg.port} user=skillwalker_builder"
    settings = {
        "SKILLWALKER_LAKE_CATALOG": team.config.catalog,
        "SKILLWALKER_LAKE_DATA_PATH": team.config.data_path,
        "BACKUP": str(root / "backup"), "NEW_DB": "restored_lake", "NEW_CATALOG": catalog,
        "NEW_DATA": f"{root}/restored-data/",
    }  # fmt: skip
    first, *blocks = _doc_blocks()
    assert sorted(re.findall(r"^(?:export )?([A-Z_]+)=", first, flags=re.M)) == sorted(settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLWALKER_")}
    env.update(settings, PGHOST="127.0.0.1", PGPORT=str(pg.port), PGUSER="postgres",
               PATH=f"{CLI.parent}:{pg.bin}:{os.environ['PATH']}", DO_NOT_TRACK="1")
    steps = []
    for block in blocks:
        steps.append(subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], env=env,
                                    cwd=root, capture_output=True, text=True, timeout=300))
        if steps[-1].returncode != 0:
            break
    config = lake.LakeConfig(f"postgres:{catalog}", settings["NEW_DATA"])
    env.update(SKILLWALKER_LAKE_CATALOG=config.catalog, SKILLWALKER_LAKE_DATA_PATH=config.data_path)
    return Restored(config, Path(settings["BACKUP"]), steps, env)


def test_a_backup_restores_as_documented(team: Team, restored: Restored) -> None:
    """docs/team-lake.md's backup (catalog dumped under the build lock, then the data folder
    copied), restore (a new database and folder) and check, run as written: the restored
    lake has every build and every run of the team lake, and `check` finds every file."""
    assert [s.returncode for s in restored.steps] == [0, 0, 0], \
        [(s.stdout, s.stderr) for s in restored.steps]  # fmt: skip
    assert len(_doc_blocks()) == 4  # the settings, then the three steps
    assert (restored.backup / "complete").is_file()
    check = restored.steps[2].stdout.splitlines()
    assert check[0].startswith("skillwalker-data: the ") and check[0].endswith(" are whole")
    assert check[-1] == "the restored lake reads as the backed-up one"
    assert [b["build_id"] for b in lake.builds(restored.config)] == \
        [b["build_id"] for b in lake.builds(team.config)]  # fmt: skip
    everyone = set().union(*(m.runs for m in team.members))
    assert _runs(lake.connect(restored.config)) == everyone
    assert _runs(lake.connect(restored.config), "test_config") == everyone


def test_check_finds_the_files_a_restore_lacks(restored: Restored, tmp_path: Path) -> None:
    """The check the docs give fails when the copied folder lacks files the dump names (what
    copying before dumping can give): a table's folder moved away, then back."""
    assert [s.returncode for s in restored.steps] == [0, 0, 0]
    table = Path(restored.config.data_path) / "main" / "test_run"
    assert any(table.rglob("*.parquet")), sorted(Path(restored.config.data_path).rglob("*"))
    table.rename(tmp_path / "test_run")
    try:
        gone = _cli(restored.env, "check", cwd=tmp_path)
    finally:
        (tmp_path / "test_run").rename(table)
    assert gone.returncode == 1, gone.stdout + gone.stderr
    assert "are damaged, in test_run;" in gone.stderr


def test_replace_views_takes_the_views_over_and_the_old_vars_are_refused(
    team: Team, restored: Restored
) -> None:
    """On the restored lake, Cy takes the views over on purpose (`--replace-views` with
    `flaky_window: 7`): the build names the team lake by its catalog and data path (not a
    local lake folder), and records the vars readably; then a plain build, which would put
    the defaults back, is refused naming `flaky_window: 7` as the lake's side."""
    assert [s.returncode for s in restored.steps] == [0, 0, 0]
    cy = team.members[2]
    env = {**cy.project.env(), "SKILLWALKER_LAKE_CATALOG": restored.config.catalog,
           "SKILLWALKER_LAKE_DATA_PATH": restored.config.data_path}  # fmt: skip
    took = _cli(env, "build", "--vars", "{flaky_window: 7}", "--replace-views",
                cwd=cy.project.root)
    assert took.returncode == 0, took.stdout + took.stderr
    assert took.stdout.splitlines()[0] == (
        f"skillwalker-data: building {cy.project.output_dir} into the team lake "
        f"{restored.config.catalog.removeprefix('postgres:')} (data {restored.config.data_path})")
    assert "views: 26 built" in took.stdout
    latest = lake.builds(restored.config)[0]
    assert latest["view_vars"] == '{"flaky_window": 7}' and latest["changed"]
    refused = _cli(env, "build", cwd=cy.project.root)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    theirs, ours = _vars_and_version_refusal(refused.stderr)
    assert theirs.startswith(f'{latest["project_version"]}, vars {{"flaky_window": 7}} (last '
                             f"such build: {latest['build_id'][:8]} by "), theirs
    assert ours == f"{latest['project_version']}, vars {{}} (the project's defaults)"
    assert lake.builds(restored.config)[0]["build_id"] == latest["build_id"]


@dataclass
class Frozen:
    waited: bool
    head_config: frozenset[str]
    read_config: frozenset[str]
    read_runs: frozenset[str]
    codes: list[int]
    outputs: list[str]
    final: frozenset[str]
    frozen_runs: frozenset[str]
    earlier: frozenset[str]
    everyone: frozenset[str]


@pytest.fixture(scope="module")
def frozen(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Frozen:
    """Eve builds one run; Dee's build is frozen (SIGSTOP) right after it committed
    test_config; Eve builds her second run meanwhile, then Dee's build goes on."""
    config, (dee, eve) = _new_lake(postgres, tmp_path_factory, "frozen_lake",
                                   {"dee": "20260601T090000", "eve": "20260701T090000"})
    later = eve.sample.run_ids[1]
    runs_dir = eve.project.output_dir / "runs"
    (runs_dir / later).rename(eve.project.root / later)  # not written yet
    eve.project.run_build(cli=True)
    first = dee.build()
    with cleaned_up(first):
        assert first.wait_for(MODEL_COMMITTED, timeout=600), first.output()[-3000:]
        first.freeze()
        try:
            (eve.project.root / later).rename(runs_dir / later)
            second = eve.build()
            with cleaned_up(second):
                waited = second.wait_for(WAITING, timeout=300)
                time.sleep(2.0)  # it goes on waiting: nothing of it lands meanwhile
                head = _runs(lake.open_instance(config, lake.ALIAS), "test_config")
                read_config = _runs(lake.connect(config), "test_config")
                read_runs = _runs(lake.connect(config))
        finally:
            first.thaw()
        with cleaned_up(second):
            codes = [first.wait(timeout=600), second.wait(timeout=600)]
    return Frozen(waited, head, read_config, read_runs, codes,
                  [first.output(), second.output()], _runs(lake.connect(config)),
                  frozenset(dee.runs), frozenset({eve.sample.run_ids[0]}),
                  frozenset(dee.runs | eve.runs))


def test_a_build_waits_for_another_machines_build_and_readers_see_none_of_it(
    frozen: Frozen,
) -> None:
    assert frozen.waited, frozen.outputs[1][-3000:]
    # the frozen build had committed test_config with its runs, the waiting one nothing ...
    assert frozen.head_config == frozen.frozen_runs | frozen.earlier
    # ... and readers read the last finished build: none of the frozen build's rows
    assert frozen.read_config == frozen.earlier
    assert frozen.read_runs == frozen.earlier
    assert frozen.codes == [0, 0], [o[-3000:] for o in frozen.outputs]
    assert frozen.final == frozen.everyone
