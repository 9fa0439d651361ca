"""Option files are read like the mysql client reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from govern.errors import ConfigError
from govern.optionfile import read_option_file


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_groups_later_values_win_and_names_fold(tmp_path: Path) -> None:
    cnf = write(
        tmp_path / "my.cnf",
        "[client]\nuser = alice\nport=3307\nssl_ca=/ca.pem\n[mysqld]\nuser=mysql\n"
        "[govern]\nuser=bob\n",
    )
    options = read_option_file(cnf)
    assert options["user"] == "bob"
    assert options["port"] == "3307"
    assert options["ssl-ca"] == "/ca.pem"


def test_quotes_escapes_comments_and_bare_keys(tmp_path: Path) -> None:
    cnf = write(
        tmp_path / "my.cnf",
        '# comment\n; another\n[client]\npassword = "p#ss \\"word\\""  # trailing\n'
        "host = db1 # comment after value\nsocket='/tmp/my sock'\nskip-ssl\n",
    )
    options = read_option_file(cnf)
    assert options["password"] == 'p#ss "word"'
    assert options["host"] == "db1"
    assert options["socket"] == "/tmp/my sock"
    assert options["skip-ssl"] is None


def test_include_and_includedir(tmp_path: Path) -> None:
    folder = tmp_path / "conf.d"
    folder.mkdir()
    write(folder / "a.cnf", "[client]\nuser=from_dir\n")
    write(folder / "ignored.txt", "[client]\nuser=never\n")
    extra = write(tmp_path / "extra.cnf", "[client]\nport=4000\n")
    cnf = write(
        tmp_path / "my.cnf", f"[client]\nuser=first\n!includedir {folder}\n!include {extra}\n"
    )
    options = read_option_file(cnf)
    assert options["user"] == "from_dir"
    assert options["port"] == "4000"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("[client\nuser=x\n", 1, "malformed group header"),
        ("user=x\n", 1, "outside any [group]"),
        ("[client]\npassword='open\n", 2, "unterminated quote"),
        ("[client]\n=value\n", 2, "option without a name"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, line: int, reason: str) -> None:
    cnf = write(tmp_path / "bad.cnf", text)
    with pytest.raises(ConfigError) as info:
        read_option_file(cnf)
    assert f"{cnf}:{line}:" in info.value.message
    assert reason in info.value.message


def test_missing_file_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="option file not found"):
        read_option_file(tmp_path / "nope.cnf")
