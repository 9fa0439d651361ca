"""JSON contracts: docs/json.md, the schemas in govern/schemas/, and what govern prints agree.

Every contract documented in docs/json.md has a JSON Schema shipped with govern, and the other
way round; the top-level fields the page lists are the schema's. One test prints a document of
every contract from a real server and validates it; the last test of the session validates every
JSON document govern printed during the whole run (tests/docs/plugin.py collects them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.docs.plugin import printed_documents
from tests.docs.support import (
    all_schemas,
    documented_contracts,
    first_table_fields,
    names,
    problems,
    schema,
)
from tests.harness import MariaDB
from tests.history.generated import UNTIL, fill
from tests.paths import REPO

EXAMPLE_LOG = REPO / "examples" / "mariadb-slow.log"
RULES_LOG = REPO / "examples" / "digest" / "rules-slow.log.gz"


def govern(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "govern", *args], capture_output=True, text=True, cwd=cwd
    )


def printed(*args: str, cwd: Path | None = None, exit_codes: tuple[int, ...] = (0,)) -> Any:
    """The JSON document a govern command prints (it must exit with one of ``exit_codes``)."""
    done = govern(*args, cwd=cwd)
    assert done.returncode in exit_codes, f"govern {' '.join(args)}: {done.stderr}"
    return json.loads(done.stdout)


# --- the schemas and the page ---------------------------------------------------------------


def test_every_schema_is_a_valid_schema_named_after_its_document() -> None:
    found = all_schemas()
    assert len(found) >= 14
    for name, document in found.items():
        Draft202012Validator.check_schema(document)
        assert document["title"].startswith(name)
        assert document.get("$id", f"/{name}.schema.json").endswith(f"/{name}.schema.json")
        assert document["properties"]["schema"] == {"const": name}
        assert document["properties"]["schema_version"]["const"] >= 1


def test_published_schemas_leave_objects_open_to_fields_added_within_a_version() -> None:
    for name, document in all_schemas().items():
        text = json.dumps(document)
        assert '"additionalProperties": false' not in text, name
        assert "unevaluatedProperties" not in text, name


def test_docs_json_md_and_the_schemas_name_the_same_contracts() -> None:
    documented = documented_contracts()
    assert sorted(documented) == names(), (
        "docs/json.md sections and govern/schemas/*.schema.json differ: "
        f"only documented {sorted(set(documented) - set(names()))}, "
        f"only a schema {sorted(set(names()) - set(documented))}"
    )
    for name, section in documented.items():
        version = int(section.split(" version ", 1)[1].split()[0])
        assert schema(name)["properties"]["schema_version"] == {"const": version}, name


@pytest.mark.parametrize("name", names())
def test_docs_json_md_lists_the_top_level_fields_of_each_schema(name: str) -> None:
    listed = first_table_fields(documented_contracts()[name])
    properties = set(schema(name)["properties"])
    assert listed == properties, (
        f"{name}: only in docs/json.md {sorted(listed - properties)}, "
        f"only in the schema {sorted(properties - listed)}"
    )


def test_the_schemas_refuse_what_the_contracts_forbid() -> None:
    """Each schema can fail: broken copies of real documents are refused, with the path."""
    digest = json.loads(govern("digest", "--format", "json", str(EXAMPLE_LOG)).stdout)
    assert problems(digest) == []
    broken = {
        "classes as a string": {**digest, "classes": "many"},
        "a count that is text": {**digest, "classes": [{**digest["classes"][0], "count": "many"}]},
        "a negative count": {**digest, "totals": {**digest["totals"], "events": -1}},
        "a metric as a string": {
            **digest,
            "metrics": {**digest["metrics"], "Query_time": "slow"},
        },
        "an unknown version": {**digest, "schema_version": 999},
        "an undocumented field": {**digest, "extra": 1},
        "a missing field": {k: v for k, v in digest.items() if k != "totals"},
    }
    for what, document in broken.items():
        assert problems(document), what
    # as published, a schema accepts a field it does not list: a later govern of the same
    # version may add one (docs/json.md); govern's own output is held to the strict copy
    assert problems(broken["an undocumented field"], published=True) == []
    assert problems(broken["a negative count"], published=True)
    where = problems(broken["a count that is text"])
    assert any(line.startswith("$.classes[0].count: 'many' is not") for line in where), where
    assert problems({"schema": "govern.nothing", "schema_version": 1}) == [
        "schema 'govern.nothing' has no govern/schemas/govern.nothing.schema.json"
    ]


# --- a document of every contract, printed by govern -----------------------------------------


def _catalog(folder: Path, defaults: Path) -> Path:
    path = folder / "nightly.toml"
    path.write_text(
        'name = "contracts"\npolicy = "sjf"\n\n'
        "[estimate]\nrows_per_second = 1000\n\n"
        f'[workers.main]\ndefaults_file = "{defaults}"\nconcurrency = 2\n\n'
        '[jobs.small]\ncommand = "true"\nrows = 10\n\n'
        '[jobs.large]\ncommand = "true"\nrows = 100\n\n'
        '[jobs.totals]\ncommand = "true"\ndepends_on = ["small", "large"]\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.server
def test_every_contract_is_kept_by_a_document_govern_prints(
    server: MariaDB, tmp_path: Path
) -> None:
    admin = server.defaults_file("govern_admin")
    app = server.defaults_file("govern_app")
    state = str(tmp_path / "state.db")
    conn = server.connect("root")
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS app.contract_sales")
        cur.execute(
            "CREATE TABLE app.contract_sales (day DATE, shop INT, sales INT, PRIMARY KEY (day, shop))"
        )
        cur.execute("DROP TABLE IF EXISTS app.contract_events")
        cur.execute("CREATE TABLE app.contract_events (id INT PRIMARY KEY, old BOOL)")
        cur.execute("INSERT INTO app.contract_events VALUES (1, 1), (2, 0), (3, 1)")
    conn.close()
    csv = tmp_path / "sales.csv"
    csv.write_text("day,shop,sales\n2026-11-21,1,10\n2026-11-21,2,oops\n", encoding="utf-8")
    saved = tmp_path / "a.json"
    saved.write_text(govern("digest", "--format", "json", str(EXAMPLE_LOG)).stdout)
    other = tmp_path / "b.json"
    other.write_text(govern("digest", "--format", "json", str(RULES_LOG)).stdout)
    catalog = _catalog(tmp_path, admin)
    load = ["load", str(csv), "-t", "app.contract_sales", "-k", "day,shop"]
    baseline = tmp_path / "baseline.json"

    documents = [
        printed("doctor", "--defaults-file", str(admin), "--json", exit_codes=(0, 1)),
        printed(*load, "--defaults-file", str(app), "--json", exit_codes=(1,)),
        printed(
            *("chunk", "DELETE FROM app.contract_events WHERE old", "--state", state),
            *("--throttle", "max_load=Threads_running=100000"),
            *("--defaults-file", str(app), "--json"),
        ),
        printed("throttle", "wait", "flag_file=/nonexistent", "--state", state, "--json"),
        printed("lint", "--format", "json", "examples/sql", cwd=REPO, exit_codes=(1,)),
        printed("lint", "--format", "sarif", "examples/sql", cwd=REPO, exit_codes=(1,)),
        printed("rules", "--format", "json"),
        printed("digest", "--format", "json", str(RULES_LOG)),
        printed("digest", "merge", "--format", "json", str(saved), str(other)),
        printed("digest", "compare", "--format", "json", str(saved), str(other), exit_codes=(0, 1)),
    ]
    written = govern(
        "lint", "examples/sql", "--baseline", str(baseline), "--write-baseline", cwd=REPO
    )
    assert written.returncode == 0, written.stderr
    documents.append(json.loads(baseline.read_text(encoding="utf-8")))
    ran = govern("run", "--defaults-file", str(admin), "--state", state, "--", "true")
    assert ran.returncode == 0, ran.stderr
    history = printed("history", "--state", state, "--json")
    assert history["runs"][0]["command"] == ["true"]
    documents += [
        history,
        printed("status", "--defaults-file", str(admin), "--state", state, "--json"),
        printed("recover", "--defaults-file", str(admin), "--state", state, "--json"),
        printed("schedule", "plan", str(catalog), "--state", state, "--json"),
        printed("schedule", "run", str(catalog), "--state", state, "--json"),
        printed("schedule", "history", str(catalog), "--state", state, "--json"),
        printed("schedule", "simulate", str(catalog), "--state", state, "--json"),
        printed(
            "collect",
            str(EXAMPLE_LOG),
            "--to",
            str(tmp_path / "buckets"),
            "--state",
            str(tmp_path / "collect.db"),
            "--once",
            "--json",
        ),
    ]

    history = tmp_path / "history.db"
    fill(history, slowed={"db2"})
    documents.append(
        printed(
            *("regressions", "--store", f"sqlite:{history}", "--until", f"{UNTIL:%Y-%m-%d %H:%M}"),
            *("--format", "json"),
            exit_codes=(1,),
        )
    )

    seen = {d.get("schema", "SARIF") for d in documents}
    assert seen >= set(names()), f"no document printed for {sorted(set(names()) - seen)}"
    for document in documents:
        assert problems(document) == [], document.get("schema", "SARIF")


# --- everything the session printed -------------------------------------------------------------


@pytest.mark.runs_last
def test_every_json_document_of_the_session() -> None:
    """Runs after every other test (tests/docs/plugin.py): each JSON document a govern command
    printed during the session keeps its contract. The first lines print two more, so the
    test has something to judge even when it runs alone."""
    printed("rules", "--format", "json")
    printed("digest", "--format", "json", str(EXAMPLE_LOG))
    documents, broken = printed_documents()
    failures = list(broken)
    for found in documents:
        failures += [f"{found.command}: {problem}" for problem in problems(found.document)[:5]]
    assert len(documents) >= 2
    assert not failures, f"{len(failures)} problems in {len(documents)} documents:\n" + "\n".join(
        failures[:50]
    )
