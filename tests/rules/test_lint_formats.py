"""Output contracts: govern.lint JSON (docs/json.md), SARIF 2.1.0 (schema-validated), GitHub."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from govern.cli import cli
from tests.paths import DATA

SCHEMA = DATA / "sarif-schema-2.1.0.json"
SQL = (
    "SELECT SQL_CACHE id FROM t WHERE d < NOW();\n"
    "SELECT SQL_CACHE 1; -- govern: ignore[QC004]\n"
    "INSERT INTO t (a) VALUES (1) AS new ON DUPLICATE KEY UPDATE a = new.a;\n"
    "SELEC 'a,b:c%\n"
)


@pytest.fixture
def sql_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "dir with space" / "q.sql"
    path.parent.mkdir()
    path.write_text(SQL)
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["lint", "dir with space/q.sql", "--target", "mariadb-10.11", *args]
    )
    return result.exit_code, result.stdout


def test_json_document(sql_file: Path) -> None:
    code, out = run("--format", "json")
    assert code == 1
    document = json.loads(out)
    assert document["schema"] == "govern.lint" and document["schema_version"] == 1
    assert document["targets"] == ["mariadb-10.11"] and document["threshold"] == "warning"
    assert (document["files"], document["statements"]) == (1, 4)
    rules = [(f["rule"], f["line"], f["column"]) for f in document["findings"]]
    assert rules == [("QC001", 1, 8), ("BATCH006", 3, 30), ("META001", 4, 7)]
    first = document["findings"][0]
    assert set(first) == {
        "rule", "name", "severity", "message", "path", "line", "column", "end_line",
        "end_column", "class_id", "evidence", "fingerprint",
    }  # fmt: skip
    assert first["path"] == "dir with space/q.sql" and first["class_id"] is None
    assert first["evidence"] == {"reasons": ["NOW()"]} and len(first["fingerprint"]) == 20
    summary = document["summary"]
    assert summary == {
        "findings": 3,
        "by_severity": {"info": 0, "warning": 0, "error": 3},
        "suppressed": 1,
        "skipped_files": 0,
        "baselined": 0,
        "below_threshold": 0,
    }
    assert "QC003" in document["rules_run"] and document["rules_skipped"] == []
    assert isinstance(document["elapsed_seconds"], float)


def test_sarif_validates_against_the_2_1_0_schema(sql_file: Path) -> None:
    code, out = run("--format", "sarif")
    assert code == 1
    document = json.loads(out)
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    run_ = document["runs"][0]
    descriptors = run_["tool"]["driver"]["rules"]
    results = run_["results"]
    assert [r["ruleId"] for r in results] == ["QC001", "BATCH006", "META001"]
    for result in results:
        assert descriptors[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["partialFingerprints"]["governFingerprint/v1"]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "dir%20with%20space/q.sql"
    assert location["region"] == {"startLine": 1, "startColumn": 8, "endLine": 1, "endColumn": 17}
    assert {r["level"] for r in results} == {"error"}


def test_sarif_with_no_findings_still_validates(sql_file: Path) -> None:
    sql_file.write_text("SELECT 1;\n")
    code, out = run("--format", "sarif")
    assert code == 0
    document = json.loads(out)
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    assert document["runs"][0]["results"] == []


def test_github_annotations_escape_properties_and_data(sql_file: Path) -> None:
    code, out = run("--format", "github")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(
        "::error file=dir with space/q.sql,line=1,col=8,endLine=1,endColumn=17,"
        "title=QC001 sql-cache-unsafe::SQL_CACHE on a query"
    )
    assert len(lines) == 3 and all(line.startswith("::error ") for line in lines)


def test_text_format_lines_and_summary(sql_file: Path) -> None:
    code, out = run()
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("dir with space/q.sql:1:8: QC001 error: SQL_CACHE on a query")
    assert "3 findings (3 errors) in 1 of 1 file, 4 statements" in out
    assert "not shown: 1 suppressed by comments or config" in out
