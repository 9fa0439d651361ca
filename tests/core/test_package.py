"""The built wheel installs one top-level package, ``govern``, and lives beside PyPI's ``rules``.

wrappers/, schedulers/ and rules/ stay at the top of the repository (the design card's folders)
and reach the package as govern.wrappers, govern.schedulers and govern.rules through symlinks
inside govern/ (docs/design/layout.md). PyPI has unrelated packages named ``rules`` (django-rules)
and ``wrappers``: a wheel that installed those names would break them or be broken by them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.paths import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ)
    # reuse the native core's compiled dependencies when cargo builds it into the wheel
    env.setdefault("CARGO_TARGET_DIR", str(REPO / "native" / "target"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        check=True,
        env=env,
        capture_output=True,
    )
    (built,) = out.glob("govern_mysql-*.whl")
    return built


def test_the_wheel_holds_only_the_govern_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"govern"}
    for feature in ("wrappers", "schedulers", "rules"):
        assert f"govern/{feature}/__init__.py" in names, feature
    assert "govern/rules/catalog/__init__.py" in names  # the symlinks' subpackages are copied
    assert "govern/schemas/govern.digest.schema.json" in names  # saved digests are checked


def test_installs_beside_pypis_rules_package(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    try:
        subprocess.run([*pip, "rules==3.5"], check=True, capture_output=True, timeout=120)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"PyPI's rules package could not be installed: {exc.stderr.decode()[-200:]}")
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, timeout=300)

    probe = (
        "import sysconfig, pathlib, rules, govern.rules.lint, govern.wrappers.runner,"
        " govern.schedulers.night\n"
        "site = pathlib.Path(sysconfig.get_paths()['purelib'])\n"
        "print(pathlib.Path(rules.__file__).parent.relative_to(site))\n"
        "print(pathlib.Path(govern.rules.__file__).parent.relative_to(site))\n"
        "print(hasattr(rules, 'predicate'))\n"
    )
    shown = subprocess.run(
        [str(python), "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path
    ).stdout.split()
    assert shown == ["rules", "govern/rules", "True"]
    version = subprocess.run(
        [str(env_dir / "bin" / "govern"), "--version"], capture_output=True, text=True
    )
    assert version.returncode == 0 and "govern" in version.stdout
