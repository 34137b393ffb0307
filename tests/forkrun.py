"""Start the ``skillwalker-data`` and ``dbt`` console scripts from a fork of a process that
has imported them, in place of ``subprocess``: :func:`run` and :class:`Popen` take the
arguments of ``subprocess.run`` and ``subprocess.Popen`` that the tests use.

Every such process a test starts would pay Python's start and dbt's import (about 2.4 of
a build's 9 CPU seconds) before it does anything, and the suite starts hundreds. A
forked process is still a process of its own, started as the console script starts: its
own pid (and its own session with ``start_new_session``), the argv, environment, working
folder and standard streams it is given, the console script's entry function
(``sys.exit(main())``), its exit status or the signal that killed it. What it does not
repeat is the interpreter's start and the imports: each test process has one server
(:func:`_serve`, started at the first call) that imports dbt, dbt-duckdb and the command
once, parses the project once to compile its macros (:func:`_warm_templates`), then
forks a child per request and reports how the child ended. A child run under ``setpriv``
with :data:`WITHOUT_DAC` is forked too, and drops those capabilities itself.

Any other program runs with ``subprocess``; so does everything with
``SKILLWALKER_TESTS_FORK=0`` (the tests then start every process with ``exec``, as a
user's shell does).

``SKILLWALKER_TESTS_TRACE=FILE`` appends a JSON line to FILE for each command that ends
(:func:`trace`): the test that ran it, the command's first two arguments and the CPU
seconds it spent. A child killed by a signal writes nothing. ``bench/suite_trace.py``
sums such a file per test file and per command.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

BIN = Path(sys.executable).parent
SCRIPTS = ("skillwalker-data", "dbt")
"""The console scripts the server starts (the entry points of ``console_scripts``)."""
ENABLED = os.environ.get("SKILLWALKER_TESTS_FORK") != "0"
PIPE, STDOUT, DEVNULL = subprocess.PIPE, subprocess.STDOUT, subprocess.DEVNULL
_PRELOAD = ("dbt.cli.main", "dbt.adapters.duckdb", "skillwalker_py.command", "skillwalker_py.cli",
            "skillwalker_py.cli.build", "skillwalker_py.pipeline.plugin",
            "skillwalker_py.pipeline.importer")


def trace(argv: Sequence[Any], cpu_s: float, how: str) -> None:
    """Append one command's CPU seconds to ``SKILLWALKER_TESTS_TRACE`` (if set); ``how``:
    ``fork`` (a forked console script) or ``in-process`` (a dbt command run in the test
    process, whose other threads' CPU meanwhile counts too)."""
    path = os.environ.get("SKILLWALKER_TESTS_TRACE")
    if path:
        record = {"test": os.environ.get("PYTEST_CURRENT_TEST", "?"), "how": how,
                  "command": [Path(str(a)).name for a in argv[:1]] + [str(a) for a in argv[1:2]],
                  "cpu_s": round(cpu_s, 3)}
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")


WITHOUT_DAC = ("--bounding-set", "-dac_override,-dac_read_search", "--")
"""``setpriv``'s arguments before a command that runs without the capabilities that let
root read any file (``reliability._harness.without_dac_override``): the server's child
drops them itself (:func:`_drop_dac`), as ``setpriv`` before its ``exec``."""


def _unprefixed(argv: Sequence[Any]) -> tuple[list[str], bool]:
    """``argv`` without a ``setpriv`` prefix of :data:`WITHOUT_DAC`, and whether it had one."""
    words = [str(a) for a in argv]
    if len(words) > 4 and Path(words[0]).name == "setpriv" and tuple(words[1:4]) == WITHOUT_DAC:
        return words[4:], True
    return words, False


def _forkable(argv: Sequence[Any]) -> bool:
    words, _ = _unprefixed(argv)
    first = Path(words[0]) if words else Path()
    return ENABLED and first.parent == BIN and first.name in SCRIPTS


def _drop_dac() -> None:
    """Drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (1 and 2) from this process's bounding,
    effective, permitted and inheritable sets: what ``setpriv --bounding-set
    -dac_override,-dac_read_search`` leaves a command it starts as root (capget and
    capset with version 3 headers, as libcap calls them)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data, keep = Header(0x20080522, 0), (Data * 2)(), ~0b110 & 0xFFFFFFFF
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[0].effective &= keep
    data[0].permitted &= keep
    data[0].inheritable &= keep
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


# ----------------------------------------------------------------------------- the server


def _entry(script: str) -> Any:
    from importlib.metadata import entry_points

    (point,) = entry_points(group="console_scripts", name=script)
    return point.load()


def _child(request: dict[str, Any], fds: list[int], entries: Mapping[str, Any]) -> None:
    """In the forked child: become the console script's process, run its entry function
    (``entries``: script name -> function, resolved once by the server), exit."""
    code: object = 1
    try:
        if request["session"]:
            os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds) - {0, 1, 2}:
            os.close(fd)
        os.chdir(request["cwd"])  # as subprocess does before it starts setpriv
        if request["drop_dac"]:
            _drop_dac()
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own streams
        sys.stdout = open(1, "w", closefd=False, buffering=1 if unbuffered else -1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        if unbuffered:
            sys.stdout.reconfigure(write_through=True)
        code = entries[Path(sys.argv[0]).name]()
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    if code is not None and not isinstance(code, int):
        with contextlib.suppress(BaseException):
            print(code, file=sys.stderr)
        code = 1
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
        usage = resource.getrusage(resource.RUSAGE_SELF)  # the child's own, from the fork
        trace(sys.argv, usage.ru_utime + usage.ru_stime, "fork")
    os._exit(code or 0)


def _warm_templates() -> None:
    """Compile the project's macros once, in the server, before it forks: dbt keeps the
    compiled Jinja template of each macro text for the life of a process
    (``dbt_common.clients.jinja.template_cache``), so a child then starts with them, as a
    second build in one process does, and does not compile again the macros each build
    calls (a build forked so: bench/README.md, "The test suite's time"). A ``dbt parse`` of
    the checkout into a scratch folder gives the macros; the lake and output folders it
    could name are scratch ones too; its connections, if any, are closed before a fork."""
    import io

    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.cli.main import dbtRunner
    from dbt.contracts.graph.manifest import Manifest
    from dbt_common.clients.jinja import template_cache

    repo = str(Path(__file__).resolve().parents[1])
    scratch = tempfile.mkdtemp(prefix="skillwalker-fork-warm-")
    saved = dict(os.environ)
    os.environ.update({"DBT_TARGET_PATH": f"{scratch}/target", "DBT_LOG_PATH": f"{scratch}/logs",
                       "SKILLWALKER_LAKE_DIR": f"{scratch}/lake",
                       "SKILLWALKER_OUTPUT_DIR": f"{scratch}/output"})
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = dbtRunner().invoke(["parse", "--project-dir", repo, "--profiles-dir", repo,
                                         "--log-level", "none", "--no-static-parser"])
        manifest = result.result if isinstance(result.result, Manifest) else None
        for macro in manifest.macros.values() if manifest is not None else ():
            with contextlib.suppress(Exception):  # a macro that compiles only in a build
                template_cache.get_node_template(macro)
    finally:
        DuckDBConnectionManager.close_all_connections()  # type: ignore[no-untyped-call]
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(scratch, ignore_errors=True)
    import gc

    gc.collect()
    gc.freeze()  # the children's collections need not walk the server's objects


def _serve(path: str) -> None:
    """Import what the scripts import, then fork a child per request on the socket ``path``
    and send back its pid, then how it ended (``subprocess``'s returncode); stop when the
    test process that started this one is gone."""
    import importlib

    for name in _PRELOAD:
        importlib.import_module(name)
    _warm_templates()
    entries = {script: _entry(script) for script in SCRIPTS}
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, socket.socket] = {}
    print("ready", flush=True)
    while os.getppid() == parent:
        ready, _, _ = select.select([listener, wake_r], [], [], 1.0)
        if wake_r in ready:
            os.read(wake_r, 4096)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.send(str(os.waitstatus_to_exitcode(status)).encode())
                conn.close()
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        if not message:
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (wake_r, wake_w, listener.fileno(), conn.fileno(),
                       *(c.fileno() for c in children.values())):
                os.close(fd)
            _child(json.loads(message), fds, entries)
        for fd in fds:
            os.close(fd)
        conn.send(str(pid).encode())
        children[pid] = conn


# ----------------------------------------------------------------------------- the client

_SERVER: tuple[subprocess.Popen[bytes], str] | None = None
_SERVER_LOCK = threading.Lock()


def _server() -> str:
    """The socket of this process's server, started at the first call."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None or _SERVER[0].poll() is not None:
            folder = tempfile.mkdtemp(prefix="skillwalker-fork-")
            path = os.path.join(folder, "socket")
            env = {**os.environ, "DO_NOT_TRACK": "1"}
            proc = subprocess.Popen([sys.executable, __file__, path], stdout=PIPE, env=env,
                                    stdin=DEVNULL)
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != b"ready":
                raise RuntimeError(f"the fork server did not start ({proc.wait()})")
            atexit.register(_stop, proc, folder)
            _SERVER = (proc, path)
        return _SERVER[1]


def _stop(proc: subprocess.Popen[bytes], folder: str) -> None:
    proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    shutil.rmtree(folder, ignore_errors=True)


def _fd(stream: Any, default: int, pipes: list[int]) -> tuple[int, int | None]:
    """(the child's fd, our end of a pipe or None) for a ``subprocess`` stream argument."""
    if stream is None:
        return default, None
    if stream == PIPE:
        read, write = os.pipe()
        theirs, ours = (read, write) if default == 0 else (write, read)
        pipes.append(theirs)
        return theirs, ours
    if stream == DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        pipes.append(fd)
        return fd, None
    return (stream if isinstance(stream, int) else stream.fileno()), None


def _stream(fd: int | None, mode: str, text: bool) -> IO[Any] | None:
    """Our end of a pipe as ``subprocess`` gives it (text: UTF-8, as the tests read it)."""
    if fd is None:
        return None
    if text:
        return open(fd, mode, encoding="utf-8", errors="replace")
    return open(fd, mode + "b")


class Popen:
    """What the tests use of ``subprocess.Popen``, for a console script (:data:`SCRIPTS`):
    ``pid``, ``returncode``, ``stdout``/``stderr``/``stdin`` (with ``PIPE``), ``poll``,
    ``wait``, ``communicate``, ``send_signal``, ``terminate``, ``kill``; else a real
    ``subprocess.Popen`` (:func:`popen`)."""

    def __init__(self, argv: Sequence[Any], *, env: Mapping[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None, stdin: Any = None,
                 stdout: Any = None, stderr: Any = None, text: bool = False,
                 start_new_session: bool = False, close_fds: bool = True) -> None:
        # close_fds: the child has its three streams only (the server closes its socket,
        # its pipe and the other children's connections in it): subprocess's default
        if not close_fds:
            raise ValueError("forkrun.Popen: close_fds=False is not supported")
        self.args = [str(a) for a in argv]
        command, drop_dac = _unprefixed(self.args)
        self.returncode: int | None = None
        opened: list[int] = []
        in_fd, self._in = _fd(stdin, 0, opened)
        out_fd, self._out = _fd(stdout, 1, opened)
        err_fd, self._err = (out_fd, None) if stderr == STDOUT else _fd(stderr, 2, opened)
        request = {"argv": command, "env": dict(os.environ if env is None else env),
                   "cwd": str(cwd or os.getcwd()), "session": start_new_session,
                   "drop_dac": drop_dac}
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._conn.connect(_server())
            socket.send_fds(self._conn, [json.dumps(request).encode()], [in_fd, out_fd, err_fd])
            self.pid = int(self._conn.recv(64))
        finally:
            for fd in opened:
                os.close(fd)
        self.stdin, self.stdout, self.stderr = (
            _stream(self._in, "w", text), _stream(self._out, "r", text),
            _stream(self._err, "r", text))

    def _ended(self, timeout: float | None) -> bool:
        """Whether the process has ended (within ``timeout`` seconds; None: wait)."""
        if self.returncode is None:
            ready, _, _ = select.select([self._conn], [], [], timeout)
            if not ready:
                return False
            said = self._conn.recv(64)
            self._conn.close()
            if not said:
                raise RuntimeError(f"the fork server stopped while {self.args} ran")
            self.returncode = int(said)
        return True

    def poll(self) -> int | None:
        self._ended(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:
        if self.stdin is not None:
            if input:
                self.stdin.write(input)
            self.stdin.close()
        results: dict[str, Any] = {}

        def read(name: str, stream: IO[Any]) -> None:
            results[name] = stream.read()

        readers = [threading.Thread(target=read, args=(name, stream))
                   for name, stream in (("out", self.stdout), ("err", self.stderr)) if stream]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(timeout)
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(timeout)
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        return results.get("out"), results.get("err")

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> Popen:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()


Process = Popen | subprocess.Popen[Any]
"""A process :func:`popen` started."""


def popen(argv: Sequence[Any], **kwargs: Any) -> Process:
    """``subprocess.Popen(argv, **kwargs)``, forked when ``argv`` starts a console script."""
    return Popen(argv, **kwargs) if _forkable(argv) else subprocess.Popen(argv, **kwargs)


def run(argv: Sequence[Any], *, input: Any = None, capture_output: bool = False,
        timeout: float | None = None, check: bool = False, **kwargs: Any
        ) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(argv, ...)``, forked when ``argv`` starts a console script."""
    if not _forkable(argv):
        return subprocess.run(argv, input=input, capture_output=capture_output,
                              timeout=timeout, check=check, **kwargs)
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = PIPE
    if input is not None:
        kwargs["stdin"] = PIPE
    proc = Popen(argv, **kwargs)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    result = subprocess.CompletedProcess(proc.args, proc.wait(), out, err)
    if check:
        result.check_returncode()
    return result


if __name__ == "__main__":
    _serve(sys.argv[1])
