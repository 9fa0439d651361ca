"""The ``govern`` program (not ``govern.cli.main``, run in process) ends a digest without Python's teardown (govern/cli.py
``QUICK_EXIT``): the output, the exit code and the atexit handlers stay those of a normal
exit, and a thread still running gets the normal exit (which waits for it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

EXAMPLE = REPO / "examples" / "digest" / "rules-slow.log.gz"

#: Runs ``govern`` as the program does; says on stderr whether the atexit handlers ran
#: and whether Python tore the interpreter down (``__main__``'s objects freed).
PROGRAM = """
import atexit, sys, threading, time

class Teardown:
    def __del__(self):
        sys.stderr.write("torn down\\n")

kept = Teardown()
atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
sys.argv, mode = ["govern", *sys.argv[2:]], sys.argv[1]
import govern.cli
if mode == "thread":  # a thread that is still running when the command has ended
    ended, real_main = threading.Event(), govern.cli.main

    def main():
        try:
            real_main()
        finally:
            ended.set()

    def work():
        ended.wait()
        time.sleep(0.3)
        sys.stderr.write("thread done\\n")

    govern.cli.main = main
    threading.Thread(target=work).start()
govern.cli.program()
"""


def run(mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, mode, *args], capture_output=True, text=True, env=env
    )


def test_a_digest_skips_the_teardown_but_not_its_output_code_or_atexit() -> None:
    proc = run("plain", "digest", "--format", "json", "--fail-on", "warning", str(EXAMPLE))
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "govern.digest"
    assert "atexit ran" in proc.stderr
    assert "torn down" not in proc.stderr
    proc = run("plain", "digest", "--format", "json", "--fail-on", "error", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "govern.digest"


def test_errors_and_other_commands_exit_as_before(tmp_path: Path) -> None:
    proc = run("plain", "digest", str(tmp_path / "missing.log"))
    assert proc.returncode == 2
    assert proc.stderr.count("govern: error:") == 1 and "atexit ran" in proc.stderr
    proc = run("plain", "rules", "--help")
    assert proc.returncode == 0 and "torn down" in proc.stderr


def test_a_running_thread_gets_the_normal_exit() -> None:
    proc = run("thread", "digest", "--format", "json", "--no-rules", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    assert "thread done" in proc.stderr and "torn down" in proc.stderr
