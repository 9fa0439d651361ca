"""``govern run`` against the real server: exits, signals, kills, overlaps, restarts.

Every test ends by asserting the server's setting, and (autouse fixture) that
nothing govern did reached the binary log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MariaDB
from tests.run.support import (
    GOVERN,
    binlog_events_since,
    binlog_position,
    finish,
    govern,
    history,
    job,
    kill_group,
    kill_wrapper,
    launch,
    process_gone,
    run_args,
    set_global,
    start,
    value,
    wait_for,
    wait_started,
)

pytestmark = pytest.mark.server


SLOW = "log_slow_query"


@pytest.fixture
def root(server: MariaDB, connect: Any) -> Iterator[Any]:
    """A root connection with the slow log ON and long_query_time 1; binlog watched."""
    conn = connect()
    set_global(conn, SLOW, "ON")
    set_global(conn, "long_query_time", "1")
    before = binlog_position(conn)
    yield conn
    check = connect()  # the test may have restarted the server
    assert binlog_events_since(check, before) == [], "govern wrote to the binary log"


def test_normal_exit_restores(server: MariaDB, root: Any, state_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    proc, _ = launch(server, state_path, folder, "--mode", "global")
    assert value(root, SLOW) == "0"
    finish(folder, 0)
    _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert value(root, SLOW) == "1"
    assert "log_slow_query ON → OFF" in err and "restored to ON" in err
    run = history(state_path)[0]
    assert run["state"] == "finished" and run["outcome"] == "restored"
    assert run["exit_code"] == 0 and run["mode"] == "global"
    assert run["window"]["start"] < run["window"]["end"]
    assert process_gone(run["watchdog_pid"]) or wait_for(
        lambda: process_gone(run["watchdog_pid"]), 5, "the watchdog to exit"
    )


def test_nonzero_exit_is_passed_on(server: MariaDB, root: Any, state_path: Path) -> None:
    result = subprocess.run(
        run_args(server, state_path, "--mode", "threshold", job=["sh", "-c", "exit 7"]),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 7, result.stderr
    assert value(root, "long_query_time") == "1.0"
    assert history(state_path)[0]["exit_code"] == 7


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_signal_reaches_the_job_then_restores(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    folder = tmp_path / "job"
    proc, _ = launch(server, state_path, folder, "--mode", "global")
    assert value(root, SLOW) == "0"
    os.kill(proc.pid, sig)
    proc.communicate(timeout=20)
    assert (folder / "signal").read_text() == str(int(sig))
    assert proc.returncode == 128 + sig
    assert value(root, SLOW) == "1"


def test_job_ignoring_term_is_killed_after_grace(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "job"
    started = time.monotonic()
    proc = start(
        run_args(
            server,
            state_path,
            "--mode",
            "global",
            "--max-runtime",
            "1",
            "--grace",
            "1",
            job=job(folder, "ignore-term"),
        )
    )
    proc.communicate(timeout=30)
    elapsed = time.monotonic() - started
    assert proc.returncode == 128 + signal.SIGKILL
    assert 2 <= elapsed < 8, elapsed
    assert value(root, SLOW) == "1"


def test_wrapper_sigkill_watchdog_restores_at_once(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "job"
    proc, job_pid = launch(server, state_path, folder, "--mode", "global", "--lease", "3")
    try:
        assert value(root, SLOW) == "0"
        kill_wrapper(proc)
        took = wait_for(lambda: value(root, SLOW) == "1", 3, "the watchdog to restore")
        assert took < 3  # within the lease
        run = history(state_path)[0]
        assert run["state"] == "recovered" and run["outcome"] == "restored"
        assert any("watchdog: the wrapper died" in w for w in run["warnings"])
        wait_for(lambda: process_gone(run["watchdog_pid"]), 5, "the watchdog to exit")
    finally:
        kill_group(job_pid)


def _event_only(
    server: MariaDB, root: Any, state_path: Path, folder: Path
) -> tuple[subprocess.Popen[str], int]:
    """A global run with a 2 s lease and its dead-man event armed, its watchdog killed."""
    set_global(root, "event_scheduler", "ON")
    proc, job_pid = launch(server, state_path, folder, "--mode", "global", "--lease", "2")
    run = history(state_path)[0]
    assert run["event"] and "govern_deadman_" in run["event"]
    os.kill(run["watchdog_pid"], signal.SIGKILL)
    return proc, job_pid


def test_server_side_event_restores_when_wrapper_and_watchdog_die(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    proc, job_pid = _event_only(server, root, state_path, tmp_path / "job")
    try:
        kill_wrapper(proc)
        took = wait_for(lambda: value(root, SLOW) == "1", 15, "the event to restore")
        assert took < 2 + 3 + 3  # lease + slack + the scheduler's own delay
        with root.cursor() as cur:
            cur.execute(
                "SELECT STATUS FROM information_schema.EVENTS WHERE EVENT_NAME LIKE 'govern%'"
            )
            assert [row[0] for row in cur.fetchall()] == ["DISABLED"]  # kept: no binlogged DROP
        status = subprocess.run(
            govern(server, state_path, "status", "--json"), capture_output=True, text=True
        )
        assert status.returncode == 1  # something needs `govern recover`: the fired event
        assert [e["status"] for e in json.loads(status.stdout)["events"]] == ["DISABLED"]
        result = subprocess.run(
            govern(server, state_path, "recover", "--json"), capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        document = json.loads(result.stdout)
        assert document["repaired"][0]["outcome"] == "unchanged"  # the event had restored it
        with root.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.EVENTS")
            assert cur.fetchone()[0] == 0
    finally:
        kill_group(job_pid)


def test_silent_wrapper_loses_its_claim_and_the_event_restores(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    """A host that falls silent (SIGSTOP): wait_timeout ends its claim, the event restores.

    Back, the run lets go and stops renewing; its connection then times out too (the job runs
    longer than a lease after that), and the run's end still drops its fired event."""
    folder = tmp_path / "job"
    proc, job_pid = _event_only(server, root, state_path, folder)
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        took = wait_for(lambda: value(root, SLOW) == "1", 15, "the event to restore")
        assert took < 2 + 3 + 3  # lease (wait_timeout) + slack + the scheduler's delay
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(2 + 2)  # it reconnects, lets go, and that connection's wait_timeout passes
        finish(folder, 0)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "someone else decided, govern leaves it" in err
        assert value(root, SLOW) == "1"
        with root.cursor() as cur:  # the run's own end dropped its fired event
            cur.execute("SELECT COUNT(*) FROM information_schema.EVENTS")
            assert cur.fetchone()[0] == 0
        status = subprocess.run(govern(server, state_path, "status"), capture_output=True)
        assert status.returncode == 0, status.stdout
    finally:
        kill_group(job_pid)
        kill_wrapper(proc)


def test_status_counts_a_fired_event_until_recover_drops_it(
    server: MariaDB, root: Any, state_path: Path
) -> None:
    set_global(root, "event_scheduler", "ON")
    with root.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(
            "CREATE EVENT app.govern_deadman_0123456789ab ON SCHEDULE AT CURRENT_TIMESTAMP"
            " ON COMPLETION PRESERVE DO SELECT 1"
        )
    wait_for(
        lambda: _events(root) == ["DISABLED"], 10, "the event to fire"
    )  # a run's event left behind: it fired, nobody dropped it
    status = subprocess.run(govern(server, state_path, "status"), capture_output=True, text=True)
    assert status.returncode == 1
    assert "1 fired govern event: `govern recover` drops it" in status.stdout
    recover = subprocess.run(govern(server, state_path, "recover"), capture_output=True, text=True)
    assert recover.returncode == 0 and "dropped 1 fired govern event" in recover.stdout
    assert _events(root) == []
    status = subprocess.run(govern(server, state_path, "status"), capture_output=True, text=True)
    assert status.returncode == 0, status.stdout


def _events(conn: Any) -> list[str]:
    with conn.cursor() as cur:
        cur.execute("SELECT STATUS FROM information_schema.EVENTS WHERE EVENT_NAME LIKE 'govern%'")
        return [str(row[0]) for row in cur.fetchall()]


def test_killed_connection_reconnects_and_restores(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "job"
    proc, _ = launch(server, state_path, folder, "--mode", "global", "--lease", "3")
    holder = _holder(root)
    assert holder is not None
    with root.cursor() as cur:
        cur.execute(f"KILL CONNECTION {holder}")
    wait_for(lambda: _holder(root) not in (None, holder), 10, "the wrapper to claim again")
    assert value(root, SLOW) == "0"
    finish(folder, 0)
    _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "reconnected" in err
    assert value(root, SLOW) == "1"


def _holder(conn: Any) -> int | None:
    with conn.cursor() as cur:
        cur.execute("SELECT IS_USED_LOCK('govern:slow:0')")
        found = cur.fetchone()[0]
    return None if found is None else int(found)


@pytest.mark.parametrize("first_out", ["A", "B"])
@pytest.mark.parametrize("plugin", [False, True])
def test_overlapping_runs_last_one_restores(
    server: MariaDB, root: Any, tmp_path: Path, first_out: str, plugin: bool
) -> None:
    """A and B overlap, each with its own state file, as from two hosts: B never saw ON."""
    if plugin:
        with root.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute("INSTALL SONAME 'metadata_lock_info'")
    try:
        runs = {}
        for name in ("A", "B"):
            folder = tmp_path / name
            proc = start(
                run_args(
                    server,
                    tmp_path / f"{name}.db",
                    "--mode",
                    "global",
                    "--name",
                    name,
                    job=job(folder),
                )
            )
            wait_started(folder, proc)
            runs[name] = (folder, proc)
            assert value(root, SLOW) == "0"
        status = subprocess.run(
            govern(server, tmp_path / "A.db", "status", "--json"), capture_output=True, text=True
        )
        document = json.loads(status.stdout)
        assert len(document["holders"]) == 2
        assert {h["original_value"] for h in document["holders"]} == {1}
        if plugin:
            assert {h["name"] for h in document["holders"]} == {"A", "B"}
        order = [first_out, "B" if first_out == "A" else "A"]
        folder, proc = runs[order[0]]
        finish(folder)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0 and "other govern run" in err
        assert value(root, SLOW) == "0"  # the other run still holds it
        folder, proc = runs[order[1]]
        finish(folder)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0 and "restored to ON" in err
        assert value(root, SLOW) == "1"
    finally:
        if plugin:
            with root.cursor() as cur:
                cur.execute("SET SESSION sql_log_bin = 0")
                cur.execute("UNINSTALL SONAME 'metadata_lock_info'")


def test_dba_change_mid_run_is_not_clobbered(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "job"
    proc, _ = launch(server, state_path, folder, "--mode", "threshold")
    assert value(root, "long_query_time") == "10.0"
    set_global(root, "long_query_time", "5")  # the DBA decides
    finish(folder, 3)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 3
    assert "govern: warning: long_query_time was changed to 5s" in err
    assert value(root, "long_query_time") == "5.0"
    assert history(state_path)[0]["outcome"] == "changed"


def test_server_restart_mid_run(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    """The server comes back with the original value from its my.cnf; govern sets it again."""
    folder = tmp_path / "job"
    proc, _ = launch(server, state_path, folder, "--mode", "global", "--lease", "3")
    server.options = {"slow_query_log": "ON"}
    try:
        server.restart()
        conn = server.connect()
        wait_for(lambda: value(conn, SLOW) == "0", 20, "govern to set it again")
        finish(folder, 0)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert value(conn, SLOW) == "1"
        assert "restored to ON" in err
        run = history(state_path)[0]
        assert run["outcome"] == "restored"
        conn.close()  # type: ignore[attr-defined]
    finally:
        server.options = {}


def test_account_without_privilege_is_refused(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    result = subprocess.run(
        run_args(
            server, state_path, "--mode", "global", job=["touch", str(marker)], user="govern_app"
        ),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 3
    assert not marker.exists()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("govern: error: ")
    assert "GRANT SUPER ON *.* TO 'govern_app'@'127.0.0.1'" in lines[0]
    result = subprocess.run(
        run_args(
            server,
            state_path,
            "--on-error=run",
            job=["sh", "-c", f"touch {marker}; exit 4"],
            user="govern_app",
        ),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 4 and marker.exists()
    assert "govern: warning:" in result.stderr and "ungoverned" in result.stderr
    assert value(root, SLOW) == "1"
    assert [r["state"] for r in history(state_path)] == ["finished", "refused"]


def test_unreachable_server_refuses_with_exit_3(state_path: Path, tmp_path: Path) -> None:
    cnf = tmp_path / "nowhere.cnf"
    cnf.write_text("[client]\nhost=127.0.0.1\nport=1\nuser=nobody\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "govern",
            "run",
            "--defaults-file",
            str(cnf),
            "--state",
            str(state_path),
            "--",
            "true",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 3
    assert result.stderr.startswith("govern: error: cannot connect to nobody@127.0.0.1:1")


def test_command_not_found_changes_nothing(server: MariaDB, root: Any, state_path: Path) -> None:
    result = subprocess.run(
        run_args(server, state_path, "--mode", "global", job=["no-such-command-x"]),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 127
    assert result.stderr.strip() == "govern: error: no-such-command-x: command not found"


def test_a_script_without_a_shebang_runs_through_sh(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    """As shells do: the kernel refuses it (ENOEXEC), so /bin/sh reads it."""
    script = tmp_path / "j.sh"
    script.write_text('echo "ran with $1 as $0"\nexit 3\n')
    script.chmod(0o755)
    result = subprocess.run(
        run_args(server, state_path, "--mode", "global", job=[str(script), "x"]),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 3, result.stderr
    assert result.stdout == f"ran with x as {script}\n"
    assert value(root, SLOW) == "1"


def test_a_binary_that_cannot_run_changes_nothing(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    binary = tmp_path / "j.bin"
    binary.write_bytes(b"\x00\x01\x02 not an executable format\n")
    binary.chmod(0o755)
    result = subprocess.run(
        run_args(server, state_path, "--mode", "global", job=[str(binary)]),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 126
    assert result.stderr.strip() == (
        f"govern: error: {binary}: cannot execute binary file: Exec format error"
    )
    assert history(state_path) == []  # refused before anything was journaled or changed


def test_passwords_in_the_job_command_line_are_never_stored_or_printed(
    server: MariaDB, root: Any, state_path: Path
) -> None:
    job = [
        "true", "mariadb", "-psecret1", "--password=secret2", "mysql://u:secret3@db1/app",
        "MYSQL_PWD=secret4", "sh", "-c", "mysqldump -u app -psecret5 app",
    ]  # fmt: skip
    result = subprocess.run(
        run_args(server, state_path, "--mode", "session", job=job), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "every local user can read it" in result.stderr
    assert history(state_path)[0]["command"] == [
        "true", "mariadb", "-p***", "--password=***", "mysql://u:***@db1/app",
        "MYSQL_PWD=***", "sh", "-c", "mysqldump -u app -p*** app",
    ]  # fmt: skip
    stored = b"".join(p.read_bytes() for p in state_path.parent.iterdir() if p.is_file())
    printed = subprocess.run(
        [*GOVERN, "history", "--json", "--state", str(state_path)], capture_output=True
    ).stdout
    for n in range(1, 6):
        assert f"secret{n}".encode() not in stored + printed + result.stderr.encode()


def test_threshold_only_raises(server: MariaDB, root: Any, state_path: Path) -> None:
    set_global(root, "long_query_time", "20")
    result = subprocess.run(
        run_args(server, state_path, "--mode", "threshold", job=["true"]),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0
    assert "long_query_time is already 20s" in result.stderr
    assert value(root, "long_query_time") == "20.0"


def test_on_a_replica_no_event_and_nothing_written(replica: MariaDB, tmp_path: Path) -> None:
    """A replica's slow log may be governed (SET GLOBAL is no write); no event is created."""
    conn = replica.connect()
    state = tmp_path / "state.db"
    try:
        set_global(conn, "event_scheduler", "ON")
        set_global(conn, SLOW, "ON")
        before = binlog_position(conn)
        folder = tmp_path / "job"
        proc = start(run_args(replica, state, "--mode", "global", job=job(folder)))
        wait_started(folder, proc)
        assert value(conn, SLOW) == "0"
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT COUNT(*) FROM information_schema.EVENTS")
            assert cur.fetchone()[0] == 0
        finish(folder)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert value(conn, SLOW) == "1"
        assert history(state)[0]["event"] is None
        assert binlog_events_since(conn, before) == []
    finally:
        set_global(conn, "event_scheduler", "OFF")
        set_global(conn, SLOW, "OFF")
        conn.close()  # type: ignore[attr-defined]


def _pty_run(args: list[str], keys: list[bytes], timeout: float = 20) -> tuple[int, str]:
    """Run ``args`` on a new terminal (its controlling tty), typing ``keys`` once it waits."""
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:  # the child: session leader on the new terminal, in the foreground
        os.execv(args[0], args)
    output = b""
    pending = list(keys)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 1024)
            except OSError:  # EIO: the terminal's last holder has gone
                break
            if not chunk:
                break
            output += chunk
        if pending and b"waiting" in output:
            key = pending.pop(0)
            os.write(fd, key)
            if key == b"\x1a":  # Ctrl-Z: govern stops with its job, like a shell job; fg it
                wait_for(lambda: _state(pid) == "T", 10, "govern to stop with its job")
                os.kill(pid, signal.SIGCONT)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize(
    "keys,expected", [([b"hello\n"], 0), ([b"\x03"], 130), ([b"\x1a", b"hello\n"], 0)]
)
def test_terminal_is_handed_to_the_job(
    server: MariaDB, root: Any, state_path: Path, keys: list[bytes], expected: int
) -> None:
    """On a terminal the job can read it (it is in the foreground) and Ctrl-C reaches it."""
    script = 'echo waiting; read line; echo "got:$line"'
    args = run_args(server, state_path, "--mode", "global", job=["sh", "-c", script])
    code, output = _pty_run(args, keys)
    assert code == expected, output
    if expected == 0:
        assert "got:hello" in output
    assert value(root, SLOW) == "1"


def _dead_run(server: MariaDB, state_path: Path, folder: Path) -> dict[str, Any]:
    """A global run whose wrapper, watchdog and job were all SIGKILLed (no event armed)."""
    proc, job_pid = launch(server, state_path, folder, "--mode", "global")
    dead = history(state_path)[0]
    os.kill(dead["watchdog_pid"], signal.SIGKILL)
    kill_wrapper(proc)
    kill_group(job_pid)
    return dead


def test_next_run_repairs_a_dead_run(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    """Wrapper and watchdog killed, no event: the next run on this host repairs first."""
    dead = _dead_run(server, state_path, tmp_path / "job")
    time.sleep(0.3)
    assert value(root, SLOW) == "0"  # nobody left to restore it
    result = subprocess.run(
        run_args(server, state_path, "--mode", "global", job=["true"]),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert f"repaired run {dead['id']}" in result.stderr
    assert value(root, SLOW) == "1"
    new, repaired = history(state_path)
    assert repaired["id"] == dead["id"] and repaired["state"] == "recovered"
    assert [c["actor"] for c in repaired["changes"]] == ["wrapper", f"run {new['id']}"]
    # The new run saw ON, not the OFF the dead run left: it repaired before it joined.
    assert new["original_text"] == "ON"


def test_recover_waits_for_the_server(
    server: MariaDB, root: Any, state_path: Path, tmp_path: Path
) -> None:
    """The server is down when recover starts: it retries with backoff until it answers."""
    dead = _dead_run(server, state_path, tmp_path / "job")
    server.stop()
    recover = start(govern(server, state_path, "recover", "--json", "--wait", "60"))
    time.sleep(1.5)
    assert recover.poll() is None  # still trying
    server.start()
    out, err = recover.communicate(timeout=60)
    assert recover.returncode == 0, err
    assert "retrying in" in err
    document = json.loads(out)
    assert [r["run_id"] for r in document["repaired"]] == [dead["id"]]
    # The restart reset the globals to the server's my.cnf: no longer govern's to change.
    assert document["repaired"][0]["message"].startswith("the server restarted since")
