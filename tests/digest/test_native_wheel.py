"""The wheel of scripts/wheel digests with the native core where there is no Rust toolchain.

scripts/wheel builds one abi3 manylinux wheel with the core inside. It is installed into a fresh
virtual environment and run with a PATH that has no cargo: ``govern doctor`` and ``govern
digest`` must name the native engine and give the classes of this checkout's own build. With the
core's library removed from that install, ``govern digest`` falls back to the Python engine, says
so on stderr, and gives the same classes (docs/design/digest-engines.md, "The wheel").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MariaDB
from tests.paths import REPO

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("cargo") is None, reason="building the wheel needs cargo"),
]

NO_CARGO_PATH = "/usr/local/bin:/usr/bin:/bin"
LOG = REPO / "examples" / "mariadb-slow.log"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed; its bin directory."""
    assert shutil.which("cargo", path=NO_CARGO_PATH) is None, "cargo on the test's PATH"
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "wheel"), str(out)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = out.glob("*.whl")
    assert re.fullmatch(r"govern_mysql-[\d.]+-cp311-abi3-manylinux_\d+_\d+_x86_64\.whl", wheel.name)
    env_dir = tmp_path_factory.mktemp("venv") / "venv"
    venv.create(env_dir, with_pip=True)
    subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
        env={**os.environ, "PATH": NO_CARGO_PATH},
        timeout=600,
    )
    return env_dir / "bin"


def run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GOVERN_NATIVE"}
    return subprocess.run(
        [str(bin_dir / "govern"), *args],
        capture_output=True,
        text=True,
        env={**env, "PATH": f"{bin_dir}:{NO_CARGO_PATH}"},
        cwd=bin_dir,
    )


def classes(output: str) -> dict[str, Any]:
    document = json.loads(output)
    return {c["id"]: (c["count"], c["metrics"]["Query_time"]["sum"]) for c in document["classes"]}


def test_the_wheel_digests_with_the_core_without_cargo(installed: Path, server: MariaDB) -> None:
    want = run(Path(sys.executable).parent, "digest", "--format", "json", str(LOG))
    got = run(installed, "digest", "--format", "json", str(LOG))
    assert got.returncode == want.returncode == 0, got.stderr
    # not a terminal, and the core is there: only the line saying what was digested
    assert got.stderr.startswith("govern: digested ") and len(got.stderr.splitlines()) == 1
    assert classes(got.stdout) == classes(want.stdout)
    assert len(classes(got.stdout)) == 45

    doctor = run(installed, "doctor", "--json", "--defaults-file", str(server.defaults_file()))
    engine = json.loads(doctor.stdout)["digest_engine"]
    assert engine["name"] == "native" and "abi3" in engine["detail"], engine


def test_without_the_core_the_python_engine_runs_and_says_so(installed: Path) -> None:
    (library,) = installed.parent.glob("lib/python3*/site-packages/govern/_native*.so")
    want = run(installed, "digest", "--format", "json", str(LOG))
    library.unlink()
    got = run(installed, "digest", "--format", "json", str(LOG))
    assert got.returncode == 0
    assert got.stderr.startswith("govern: warning: digest engine: Python (the native core")
    assert got.stderr.splitlines()[1].startswith("govern: digested ")
    assert len(got.stderr.splitlines()) == 2
    assert classes(got.stdout) == classes(want.stdout)
