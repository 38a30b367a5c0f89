"""The SQL kflame sends to ClickHouse also runs on a current ClickHouse, with the same answers.

The `sql_corpus` example (crates/kflame-clickhouse/examples/sql_corpus.rs) makes the tables
on a real Debian clickhouse-server 18.16 started on loopback, writes three hosts' history and
asks every question of the store's reader, with KFLAME_CLICKHOUSE_SQL_LOG set: every
statement, the rows sent with it and, for each SELECT, 18.16's answer as TSV are logged.
This test replays that log in order on chdb (ClickHouse 26.x in-process, PyPI chdb-core):
the same DDL (local tables; Distributed tables need a cluster, which chdb has not), the
same rows (read from the logged Native blocks with file()), and every SELECT, whose
answer must equal 18.16's (rows compared as sorted sets: kflame sorts what it needs sorted).
"""

import json
import os
import subprocess
import tempfile
import unittest

from chdb import session

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.environ.get("KFLAME_SQL_CORPUS", os.path.join(ROOT, "target/debug/examples/sql_corpus"))


def rows(tsv):
    """TSV rows as tuples, numbers as floats rounded to 9 significant digits."""
    out = []
    for line in tsv.splitlines():
        fields = []
        for f in line.split("\t"):
            try:
                v = float(f)
                fields.append(("n", float(f"{v:.9g}")))
            except ValueError:
                fields.append(("s", f))
        out.append(tuple(fields))
    return sorted(out)


class SameSqlOnCurrentClickHouse(unittest.TestCase):
    def test_every_statement_runs_and_answers_alike(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "log")
            env = dict(os.environ, KFLAME_CLICKHOUSE_SQL_LOG=log)
            subprocess.run([CORPUS], check=True, env=env, timeout=300)
            with open(os.path.join(log, "statements.jsonl")) as f:
                statements = [json.loads(line) for line in f]
            self.assertGreater(len(statements), 40)
            s = session.Session(os.path.join(d, "chdb"))
            compared = 0
            inserted = set()
            kinds = set()
            for st in statements:
                sql = st["sql"]
                if sql.startswith("SELECT version()"):
                    continue
                data = os.path.join(log, st["data"]) if "data" in st else None
                if st.get("data_kind") == "insert":
                    head, fmt = sql[len("INSERT INTO "):].rsplit(" FORMAT ", 1)
                    table, cols = head.split(" (", 1)
                    cols = cols.rstrip(")")
                    db, name = table.split(".")
                    types = dict(
                        line.split("\t")
                        for line in str(s.query(
                            f"SELECT name, type FROM system.columns WHERE database = '{db}' AND table = '{name}'",
                            "TSV")).splitlines())
                    structure = ", ".join(f"{c} {types[c]}" for c in cols.split(", "))
                    s.query(f"INSERT INTO {table} ({cols}) SELECT * FROM file('{data}', '{fmt}', '{structure}')")
                    inserted.add(table)
                    continue
                if data is not None:
                    # An external table: the same rows in a table of that name.
                    name, structure = st["data_kind"].split(":", 1)
                    s.query(f"DROP TABLE IF EXISTS default.{name}")
                    s.query(f"CREATE TABLE default.{name} ({structure}) ENGINE = Memory")
                    s.query(f"INSERT INTO default.{name} SELECT * FROM file('{data}', 'RowBinary', '{structure}')")
                    sql = sql.replace(f"FROM {name})", f"FROM default.{name})")
                if sql.startswith("CREATE TABLE"):
                    kinds.add(sql.split(" ENGINE = ")[1].split(" ")[0].split("(")[0])
                if "tsv" not in st:
                    s.query(sql)
                    continue
                got = str(s.query(sql[: -len(" FORMAT RowBinary")], "TSV"))
                with open(os.path.join(log, st["tsv"])) as f:
                    want = f.read()
                if "system.parts" in sql:
                    # Sizes on disk differ between versions, and so do the rows of the stack
                    # table until background merges fold its copies; the rows of the others
                    # must not.
                    kept = lambda rs: [r[0] + r[-1:] for r in rs if r[0] != ("s", "stacks")]
                    self.assertEqual(kept(rows(got)), kept(rows(want)), sql)
                    self.assertEqual([r[0] for r in rows(got)], [r[0] for r in rows(want)], sql)
                else:
                    self.assertEqual(rows(got), rows(want), sql)
                compared += 1
            # What `kflame store init --retain 30d` sends to a current server: with TTL.
            with open(os.path.join(log, "ddl-26.sql")) as f:
                ddl = [x.strip() for x in f.read().split(";\n") if x.strip()]
            for stmt in ddl:
                s.query(stmt)
            ttl = str(s.query("SELECT count() FROM system.tables WHERE database = 'kflame_modern' "
                              "AND create_table_query LIKE '%TTL day + toIntervalDay(30)%'", "TSV")).strip()
            tables = [x for x in ddl if x.startswith("CREATE TABLE")]
            self.assertEqual(ttl, str(len(tables)), ddl)
            self.assertEqual(len(inserted), len(tables), f"every table written to: {inserted}")
            self.assertGreater(compared, 25)
            self.assertEqual(kinds, {"MergeTree", "ReplacingMergeTree", "SummingMergeTree"})


if __name__ == "__main__":
    unittest.main()
