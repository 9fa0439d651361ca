"""govern lint: discovery, config precedence, suppressions, baseline, thresholds, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from govern.cli import cli
from govern.rules.lint import LintOptions, lint_paths, lint_text

UNSAFE = "SELECT SQL_CACHE id FROM t WHERE d < NOW();\n"  # QC001 error
NO_TABLE = "SELECT SQL_CACHE 1;\n"  # QC004 warning


def lint(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["lint", *args], input=input)


def findings(result: Result) -> list[tuple[str, int, str]]:
    document = json.loads(result.stdout)
    return [(Path(f["path"]).name, f["line"], f["rule"]) for f in document["findings"]]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- exit codes and discovery -------------------------------------------------------------


def test_exit_codes_clean_findings_usage(tree: Path) -> None:
    write(tree / "ok.sql", "SELECT id FROM t;\n")
    write(tree / "bad.sql", UNSAFE)
    assert lint("ok.sql").exit_code == 0
    result = lint("bad.sql")
    assert result.exit_code == 1
    assert "bad.sql:1:8: QC001 error:" in result.stdout
    missing = lint("nope.sql")
    assert (
        missing.exit_code == 2
        and "govern: error: nope.sql: no such file or directory" in missing.output
    )
    assert lint("--target", "oracle-19").exit_code == 2
    assert lint("--severity", "fatal").exit_code == 2
    assert lint("--select", "QC999").exit_code == 2


def test_directories_globs_and_stdin(tree: Path) -> None:
    write(tree / "a" / "one.sql", UNSAFE)
    write(tree / "a" / "deep" / "two.sql", UNSAFE)
    write(tree / "a" / ".hidden" / "three.sql", UNSAFE)
    write(tree / "a" / "notes.txt", UNSAFE)
    result = lint("a", "--format", "json")
    assert sorted(name for name, _, _ in findings(result)) == ["one.sql", "two.sql"]
    result = lint("a/**/t*.sql", "--format", "json")
    assert [name for name, _, _ in findings(result)] == ["two.sql"]
    assert lint("a/*.nothing").exit_code == 2
    (tree / "empty").mkdir()
    nothing = lint("empty")
    assert nothing.exit_code == 0 and "no SQL files found in empty" in nothing.stderr
    piped = lint("-", "--format", "json", input=UNSAFE)
    assert piped.exit_code == 1
    assert json.loads(piped.stdout)["findings"][0]["path"] == "<stdin>"


def test_select_ignore_and_severity_threshold(tree: Path) -> None:
    write(tree / "x.sql", UNSAFE + NO_TABLE)
    assert [r for _, _, r in findings(lint("x.sql", "--format", "json"))] == ["QC001", "QC004"]
    assert [r for _, _, r in findings(lint("x.sql", "--format", "json", "--select", "QC004"))] == [
        "QC004"
    ]
    assert [
        r for _, _, r in findings(lint("x.sql", "--format", "json", "--ignore", "QC001,META"))
    ] == ["QC004"]
    only_errors = lint("x.sql", "--severity", "error")
    assert only_errors.exit_code == 1 and "QC004" not in only_errors.stdout
    assert "1 below --severity error" in only_errors.stdout
    write(tree / "warn.sql", NO_TABLE)
    assert lint("warn.sql", "--severity", "error").exit_code == 0


def test_mariadb_and_client_forms_are_understood(tree: Path) -> None:
    write(
        tree / "m.sql",
        "SET STATEMENT max_statement_time = 5 FOR SELECT SQL_CACHE day FROM daily_summary;\n"
        "SET STATEMENT max_statement_time = 5 FOR SELECT SQL_CACHE NOW() FROM daily_summary;\n"
        "source other.sql;\n"
        "BEGIN NOT ATOMIC\n  DECLARE i INT DEFAULT 0;\n  WHILE i < 3 DO\n"
        "    INSERT INTO t (a) VALUES (i);\n    SET i = i + 1;\n  END WHILE;\nEND;\n",
    )
    got = findings(lint("m.sql", "--format", "json"))
    assert got == [("m.sql", 2, "QC001"), ("m.sql", 7, "BATCH007")]


def test_rules_needing_a_target_are_named_when_skipped(tree: Path) -> None:
    write(tree / "x.sql", "SELECT SQL_CACHE id FROM t;\n")
    result = lint("x.sql")
    assert result.exit_code == 0
    assert "not run: BATCH005, BATCH006, QC003 (needs a target server" in result.stdout
    assert lint("x.sql", "--target", "mysql-8.0").exit_code == 1


def test_binary_and_non_utf8_files_are_reported_not_crashed(tree: Path) -> None:
    (tree / "bin.sql").write_bytes(b"\x00\x01SELECT")
    (tree / "latin.sql").write_bytes(b"SELECT 1;\nSELECT 'caf\xe9';\n")
    result = lint("bin.sql", "latin.sql", "--format", "json", "--severity", "info")
    document = json.loads(result.stdout)
    found = {
        (Path(f["path"]).name, f["line"]): (f["severity"], f["message"])
        for f in document["findings"]
    }
    assert found[("bin.sql", 1)][0] == "error" and "binary file" in found[("bin.sql", 1)][1]
    # the server takes such bytes as a binary string (mariadb-dump's BLOBs): info, not error
    assert found[("latin.sql", 2)][0] == "info" and "not valid UTF-8" in found[("latin.sql", 2)][1]
    assert result.exit_code == 1
    assert lint("latin.sql").exit_code == 0


def test_garbage_never_tracebacks(tree: Path) -> None:
    import random

    rng = random.Random(7)
    alphabet = "SELECT FROM WHERE ( ) ' \" ` ; -- /* */ # @ ? %s BEGIN END DELIMITER // \n x 1 ,"
    for index in range(40):
        text = "".join(rng.choice([*alphabet.split(" "), " "]) for _ in range(60))
        write(tree / f"g{index}.sql", text)
    result = lint(".", "--format", "json")
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["files"] == 40


@pytest.mark.parametrize(
    ("sql", "deepest"),
    [
        ("SELECT " + "(" * 10_000 + "1" + ")" * 10_000 + ";\n", "10,000"),
        (
            "SELECT * FROM t WHERE a IN "
            + "(SELECT a FROM t WHERE a IN " * 2_000
            + "(1)"
            + ")" * 2_000
            + ";\n",
            "2,001",
        ),
    ],
    ids=["10000-parentheses", "2000-subqueries"],
)
def test_deep_nesting_is_one_finding_not_a_traceback(tree: Path, sql: str, deepest: str) -> None:
    """sqlglot recursed into a RecursionError (exit 1, read as findings) on these."""
    write(tree / "deep.sql", sql + "SELEC broken;\n")
    result = lint("deep.sql", "--format", "json", "--severity", "info")
    assert result.exit_code == 1 and not isinstance(result.exception, RecursionError)
    found = [(f["line"], f["rule"], f["severity"]) for f in json.loads(result.stdout)["findings"]]
    assert found == [(1, "META001", "info"), (2, "META001", "error")]  # the rest is still linted
    message = json.loads(result.stdout)["findings"][0]["message"]
    assert message.startswith(f"not analysed: brackets nested {deepest} deep")
    assert (
        lint("deep.sql").exit_code == 1 and "1 below --severity warning" in lint("deep.sql").stdout
    )


def test_the_delimiter_repro_reports_the_typo_and_the_run(tree: Path) -> None:
    sql = "DELIMITER $$\nCREATE PROCEDURE p() BEGIN SELECT 1; END$$\nDELIMITER ;\nSELEC broken;\n"
    sql += "".join(f"INSERT INTO t (a) VALUES ({i});\n" for i in range(1, 31))
    write(tree / "d.sql", sql)
    result = lint("d.sql", "--format", "json", "--target", "mariadb-10.11", "--severity", "info")
    document = json.loads(result.stdout)
    assert document["statements"] == 32
    assert findings(result) == [("d.sql", 4, "META001"), ("d.sql", 5, "BATCH008")]


def test_a_delimiter_block_never_closed_is_reported_once(tree: Path) -> None:
    write(
        tree / "d.sql",
        "SELECT 1;\nDELIMITER //\nCREATE PROCEDURE p() BEGIN SELECT 1; END\n" + "SELECT 2;\n" * 5,
    )
    document = json.loads(lint("d.sql", "--format", "json").stdout)
    assert [(f["line"], f["rule"], f["message"]) for f in document["findings"]] == [
        (
            3,
            "META001",
            "no // ends this statement before the end of the file: the DELIMITER // of line 2 "
            "is still in force, so everything from here on is one statement",
        )
    ]


# --- configuration --------------------------------------------------------------------------


def test_nearest_config_wins_whole(tree: Path) -> None:
    write(tree / "pyproject.toml", '[tool.govern.rules]\nignore = ["QC004"]\n')
    write(tree / "top.sql", UNSAFE + NO_TABLE)
    write(tree / "sub" / "govern.toml", '[rules]\nselect = ["QC004"]\n')
    write(tree / "sub" / "low.sql", UNSAFE + NO_TABLE)
    write(tree / "other" / "pyproject.toml", "[project]\nname = 'x'\n")  # no [tool.govern]: skipped
    write(tree / "other" / "mid.sql", UNSAFE + NO_TABLE)
    got = findings(lint(".", "--format", "json"))
    assert ("top.sql", 1, "QC001") in got and ("top.sql", 2, "QC004") not in got
    assert ("low.sql", 2, "QC004") in got and ("low.sql", 1, "QC001") not in got
    assert ("mid.sql", 1, "QC001") in got and ("mid.sql", 2, "QC004") not in got


def test_govern_toml_beats_pyproject_in_the_same_directory(tree: Path) -> None:
    write(tree / "pyproject.toml", '[tool.govern]\ntarget = "mysql-8.0"\n')
    write(tree / "govern.toml", 'target = "mariadb-10.11"\n')
    write(
        tree / "x.sql", "INSERT INTO t (a) VALUES (1) AS new ON DUPLICATE KEY UPDATE a = new.a;\n"
    )
    assert [r for _, _, r in findings(lint("x.sql", "--format", "json"))] == ["BATCH006"]
    # The command line beats the config.
    assert findings(lint("x.sql", "--format", "json", "--target", "mysql-8.0")) == []


def test_per_path_ignores_options_and_severity_overrides(tree: Path) -> None:
    write(
        tree / "govern.toml",
        '[rules.BATCH003]\nmax-rows = 2\nseverity = "error"\n\n'
        '[lint]\nper-path-ignores = { "legacy/*" = ["BATCH003"] }\n',
    )
    rows = "INSERT INTO t (a) VALUES (1), (2), (3);\n"
    write(tree / "new.sql", rows)
    write(tree / "legacy" / "old.sql", rows)
    document = json.loads(lint(".", "--format", "json").stdout)
    assert [(Path(f["path"]).name, f["rule"], f["severity"]) for f in document["findings"]] == [
        ("new.sql", "BATCH003", "error")
    ]
    assert document["summary"]["suppressed"] == 1  # the per-path ignore, counted


def test_tool_govern_tables_in_govern_toml_are_read(tree: Path) -> None:
    write(
        tree / "govern.toml",
        '[tool.govern]\ntarget = "mysql-8.0"\n[tool.govern.rules]\nselect = ["QC"]\n',
    )
    write(
        tree / "x.sql",
        "SELECT SQL_CACHE a FROM t;\nINSERT INTO t (a) VALUES (1), (2) AS new ON DUPLICATE KEY UPDATE a = new.a;\n",
    )
    assert findings(lint("x.sql", "--format", "json")) == [("x.sql", 1, "QC003")]
    write(tree / "govern.toml", 'target = "mysql-8.0"\n[tool.govern]\ntarget = "mysql-8.0"\n')
    result = lint("x.sql")
    assert result.exit_code == 2 and "use one of the two forms" in result.output


def test_per_path_targets_and_skips_are_counted(tree: Path) -> None:
    write(
        tree / "govern.toml",
        'target = "mariadb-10.11"\n'
        '[[lint.paths]]\nglob = "mysql/**"\ntarget = "mysql-8.0"\n'
        '[[lint.paths]]\nglob = "pg/**"\nskip = true\n',
    )
    write(tree / "mysql" / "a.sql", "SELECT SQL_CACHE a FROM t;\n")
    write(tree / "maria" / "b.sql", "SELECT SQL_CACHE a FROM t;\n")
    write(tree / "pg" / "c.sql", "SELECT 1::int;\n")
    result = lint(".", "--format", "json")
    document = json.loads(result.stdout)
    assert findings(result) == [("a.sql", 1, "QC003")]
    assert document["targets"] == ["mariadb-10.11", "mysql-8.0"]
    assert document["files"] == 2 and document["summary"]["skipped_files"] == 1
    assert "not linted: 1 file" in lint(".").stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("targt = 'mysql-8.0'\n", "govern.toml:1: unknown key 'targt' (did you mean 'target'?)"),
        (
            "[lint]\n\nseverty = 'error'\n",
            "govern.toml:3: [lint] unknown key 'severty' (did you mean 'severity'?)",
        ),
        (
            "[tool.govern.lint]\nexclud = []\n",
            "govern.toml:2: [tool.govern.lint] unknown key 'exclud' (did you mean 'exclude'?)",
        ),
        (
            "[rules.QC005]\ntabels = []\n",
            "govern.toml:2: [rules.QC005] unknown option 'tabels' (did you mean 'tables'?)",
        ),
        (
            "[[lint.paths]]\nglob = 'a'\ntargte = 'mysql-8.0'\n",
            "govern.toml:3: [lint] paths #1 unknown key 'targte' (did you mean 'target'?)",
        ),
        (
            "[[lint.paths]]\nglob = 'a'\n",
            "govern.toml: [lint] paths #1: give a target, skip = true or batch-job = true",
        ),
    ],
)
def test_unknown_keys_name_file_line_and_the_nearest_key(
    tree: Path, text: str, message: str
) -> None:
    write(tree / "govern.toml", text)
    write(tree / "x.sql", "SELECT 1;\n")
    result = lint("x.sql")
    assert result.exit_code == 2 and result.output == f"govern: error: {message}\n"


def test_exclude_and_config_severity(tree: Path) -> None:
    write(tree / "govern.toml", '[lint]\nexclude = ["vendor/*"]\nseverity = "error"\n')
    write(tree / "vendor" / "lib.sql", UNSAFE)
    write(tree / "mine.sql", NO_TABLE)
    result = lint(".")
    assert result.exit_code == 0 and "0 findings in 0 of 1 file" in result.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[rules]\nselect = ['QC9']\n", "govern.toml: [rules] select: unknown rule 'QC9'"),
        ("[rules.QC005]\ntables = 'x'\n", "govern.toml: [rules.QC005] tables must be list"),
        ("[rules.BATCH003]\nmax_rows = 5\n", "[rules.BATCH003] unknown option 'max_rows'"),
        ("[rules]\nselekt = []\n", "govern.toml:2: [rules] unknown key 'selekt'"),
        ("[lint]\nseverity = 'loud'\n", "[lint] severity: unknown severity 'loud'"),
        ("target = 'db2-11'\n", "govern.toml: target: unknown target 'db2-11'"),
        ("[rules\n", "govern.toml: "),
    ],
)
def test_bad_config_is_one_line_exit_2(tree: Path, text: str, message: str) -> None:
    write(tree / "govern.toml", text)
    write(tree / "x.sql", "SELECT 1;\n")
    result = lint("x.sql")
    assert result.exit_code == 2
    assert message in result.output and result.output.count("\n") == 1


def test_pyproject_errors_name_the_tool_govern_table(tree: Path) -> None:
    write(tree / "pyproject.toml", "[tool.govern.lint]\nbogus = 1\n")
    write(tree / "x.sql", "SELECT 1;\n")
    result = lint("x.sql")
    assert (
        result.exit_code == 2
        and "pyproject.toml:2: [tool.govern.lint] unknown key 'bogus'" in result.output
    )


# --- suppressions ---------------------------------------------------------------------------


def test_inline_suppression_covers_its_statement(tree: Path) -> None:
    sql = (
        "SELECT SQL_CACHE 1; -- govern: ignore[QC004]\n"  # trailing: this statement
        "-- govern: ignore[QC004]\n"  # own line: the next statement
        "SELECT SQL_CACHE 2;\n"
        "SELECT SQL_CACHE\n  3\n; # govern: ignore[QC004] on the last line of a statement\n"
        "SELECT SQL_CACHE 4; /* govern: ignore[QC001] */\n"  # wrong rule: still reported
    )
    write(tree / "s.sql", sql)
    got = findings(lint("s.sql", "--format", "json"))
    assert ("s.sql", 7, "QC004") in got
    assert ("s.sql", 7, "META003") in got  # ignore[QC001] suppressed nothing
    assert [line for _, line, rule in got if rule == "QC004"] == [7]


def test_file_level_and_bare_suppressions(tree: Path) -> None:
    write(
        tree / "f.sql",
        "-- govern: ignore-file[QC004]\nSELECT SQL_CACHE 1;\nSELECT SQL_CACHE 2;\n" + UNSAFE,
    )
    assert [r for _, _, r in findings(lint("f.sql", "--format", "json"))] == ["QC001"]
    write(tree / "all.sql", "-- govern: ignore-file\n" + UNSAFE + NO_TABLE)
    assert lint("all.sql").exit_code == 0


def test_unknown_and_malformed_suppressions(tree: Path) -> None:
    write(tree / "u.sql", "SELECT 1; -- govern: ignore[QC999]\nSELECT 2; -- govern: ignor[QC001]\n")
    got = findings(lint("u.sql", "--format", "json"))
    assert got == [("u.sql", 1, "META002"), ("u.sql", 2, "META002")]


def test_suppressing_a_rule_that_did_not_run_is_not_unused(tree: Path) -> None:
    write(tree / "t.sql", "SELECT id FROM t; -- govern: ignore[QC003]\n")
    assert lint("t.sql").exit_code == 0  # QC003 needs a target: not run, not "unused"
    assert "META003" in lint("t.sql", "--target", "mysql-8.0").stdout


def test_suppression_text_in_a_string_is_not_a_suppression(tree: Path) -> None:
    write(tree / "q.sql", "SELECT SQL_CACHE 'govern: ignore[QC004]';\n")
    assert [r for _, _, r in findings(lint("q.sql", "--format", "json"))] == ["QC004"]


# --- baseline -------------------------------------------------------------------------------


def test_baseline_fails_only_on_new_findings(tree: Path) -> None:
    write(tree / "m.sql", UNSAFE + NO_TABLE)
    written = lint("m.sql", "--baseline", "base.json", "--write-baseline")
    assert written.exit_code == 0 and "baseline base.json written: 2 findings" in written.stdout
    document = json.loads((tree / "base.json").read_text())
    assert document["schema"] == "govern.lint-baseline" and document["schema_version"] == 1
    assert {e["path"] for e in document["findings"]} == {"m.sql"}
    clean = lint("m.sql", "--baseline", "base.json")
    assert clean.exit_code == 0 and "2 in the baseline" in clean.stdout
    # Moving statements and reindenting keeps them baselined; a new finding fails.
    write(tree / "m.sql", "\n\n  " + NO_TABLE + UNSAFE.replace(" ", "  ") + "SELECT SQL_CACHE 5;\n")
    result = lint("m.sql", "--baseline", "base.json", "--format", "json")
    assert result.exit_code == 1
    assert findings(result) == [("m.sql", 5, "QC004")]


def test_baseline_from_config_and_bad_baselines(tree: Path) -> None:
    write(tree / "govern.toml", '[lint]\nbaseline = "ci/baseline.json"\n')
    write(tree / "m.sql", UNSAFE)
    (tree / "ci").mkdir()
    assert lint("m.sql").exit_code == 2  # configured but missing: say so
    assert lint("m.sql", "--write-baseline").exit_code == 0
    assert lint("m.sql").exit_code == 0
    write(tree / "ci" / "baseline.json", "{not json")
    result = lint("m.sql")
    assert result.exit_code == 2 and "ci/baseline.json: not a govern baseline" in result.output


# --- library ----------------------------------------------------------------------------------


def test_library_api(tree: Path) -> None:
    write(tree / "x.sql", UNSAFE)
    report = lint_paths(["x.sql"], LintOptions(target="mariadb-10.11"))
    assert report.exit_code == 1 and report.targets == ["mariadb-10.11"]
    finding = report.findings[0]
    assert (finding.rule_id, str(finding.location)) == ("QC001", "x.sql:1:8")
    assert finding.evidence == {"reasons": ["NOW()"]}
    assert lint_text("SELECT 1").exit_code == 0


def test_no_traceback_for_a_user_mistake_in_a_subprocess(tree: Path) -> None:
    write(tree / "govern.toml", "[rules]\nignore = 'QC001'\n")
    write(tree / "x.sql", "SELECT 1;\n")
    proc = subprocess.run(
        [sys.executable, "-m", "govern", "lint", "x.sql"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("govern: error: ") and "Traceback" not in proc.stderr


_RSS_PROBE = """
import resource, sys, tempfile
from pathlib import Path
from govern.rules.lint import LintOptions, lint_paths
statement = "SELECT id, email, name FROM users WHERE id = 12345 AND country = 'DE';\\n"
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "big.sql"
    path.write_text(statement * int(sys.argv[1]))
    report = lint_paths([str(path)], LintOptions(target="mariadb-10.11"))
assert report.statements == int(sys.argv[1]) and not report.findings
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_memory_is_bounded_by_the_statement_not_the_file() -> None:
    """A file is read in windows and its statements split, checked and dropped one at a
    time: 100,000 statements (7.2 MB; held at once, the text, its line offsets and the
    statements' spans came to some 40 MB) cost little more than 10."""

    def peak_kib(statements: int) -> int:
        proc = subprocess.run(
            [sys.executable, "-c", _RSS_PROBE, str(statements)],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(proc.stdout.strip())

    growth = peak_kib(100_000) - peak_kib(10)
    assert growth < 12 * 1024, f"peak RSS grew {growth / 1024:.0f} MiB for 7.2 MB of SQL"


def test_quiet_on_stderr_when_piped(tree: Path) -> None:
    write(tree / "x.sql", UNSAFE * 300)
    proc = subprocess.run(
        [sys.executable, "-m", "govern", "lint", "x.sql"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and proc.stderr == ""
    report = lint_paths(["x.sql"], LintOptions(progress=True))  # the bar, forced on, completes
    assert report.statements == 300
