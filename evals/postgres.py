"""A throwaway PostgreSQL cluster on 127.0.0.1, and copies of SQLite databases in it.

The tests and the SQL suite's Postgres run use Debian's server binaries (`make postgres` installs them): `initdb`
in a temporary folder, `pg_ctl` to start and stop it. pytest-postgresql does the same through the same
binaries, but refuses to run as root, which CI is; here the server runs as the `postgres` system user then.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text

from tools.servers import free_port

BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
SUPERUSER = "postgres"


class PostgresUnavailable(RuntimeError):
    """The server binaries are not installed, or the cluster would not start; the message says which."""


@dataclass(frozen=True)
class Cluster:
    port: int
    password: str
    folder: Path

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        return f"postgresql+psycopg://{SUPERUSER}:{password or self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        admin = create_engine(self.url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        return self.url(name)


def _binary(name: str) -> str:
    found = shutil.which(name) or next((str(d / name) for d in BIN_DIRS if (d / name).is_file()), None)
    if found is None:
        raise PostgresUnavailable(f"PostgreSQL's `{name}` is not installed (Debian package `postgresql`; `make postgres`)")
    return found


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", SUPERUSER, "--", *command] if os.geteuid() == 0 else command


@contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    """A fresh cluster with password authentication on 127.0.0.1, deleted when the block ends."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    folder = Path(tempfile.mkdtemp(prefix="ragrouter-pg-"))
    password = secrets.token_hex(8)
    (folder / "pw").write_text(password)
    if os.geteuid() == 0:
        owner = pwd.getpwnam(SUPERUSER)
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        os.chown(folder / "pw", owner.pw_uid, owner.pw_gid)
    data, port = folder / "data", free_port()
    run = {"check": True, "capture_output": True, "text": True}
    try:
        subprocess.run(
            _as_server_user(
                [initdb, "-D", str(data), "-U", SUPERUSER, "--pwfile", str(folder / "pw"), "-A", "scram-sha-256", "-E", "UTF8", "--locale=C"]
            ),
            **run,
        )
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(_as_server_user([pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "start"]), **run)
    except subprocess.CalledProcessError as err:
        shutil.rmtree(folder, ignore_errors=True)
        raise PostgresUnavailable(f"the throwaway PostgreSQL cluster did not start: {err.stderr.strip() or err.stdout.strip()}") from err
    try:
        yield Cluster(port, password, folder)
    finally:
        subprocess.run(_as_server_user([pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"]), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


# SQLite declared types by affinity (sqlite.org/datatype3.html, 3.1) to the Postgres type that holds them.
AFFINITY = (
    ("INT", "bigint"),
    ("CHAR", "text"),
    ("CLOB", "text"),
    ("TEXT", "text"),
    ("REAL", "double precision"),
    ("FLOA", "double precision"),
    ("DOUB", "double precision"),
)
NUMERIC = re.compile(r"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")


def _postgres_type(declared: str, values: list) -> str:
    """The declared type's Postgres twin, widened to double precision or text where the stored values need it
    (SQLite keeps any value in any column: Spider has text in INT columns and '' in numeric ones)."""
    wanted = next((pg for key, pg in AFFINITY if key in declared.upper()), "numeric" if declared.strip() else "text")
    present = [v for v in values if v is not None and v != ""]
    if wanted == "text" or all(isinstance(v, int) for v in present):
        return wanted if wanted != "numeric" or present else "text"
    if all(isinstance(v, (int, float)) or (isinstance(v, str) and NUMERIC.match(v.strip())) for v in present):
        return "double precision" if wanted in {"bigint", "numeric"} and any(not isinstance(v, int) for v in present) else wanted
    return "text"


def _cell(value: object, pg_type: str) -> object:
    if pg_type == "text":
        return None if value is None else (value if isinstance(value, str) else str(value))
    if value in (None, ""):
        return None
    return float(value) if pg_type == "double precision" else int(float(value)) if pg_type == "bigint" else value


def copy_sqlite(sqlite_file: Path, url: str) -> dict[str, int]:
    """Copy every table of a SQLite file into the (empty) database at `url`, names lower-cased as Postgres folds
    unquoted ones; returns the rows copied per table."""
    source = sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True)
    source.text_factory = lambda b: b.decode("utf-8", errors="replace")
    target = create_engine(url)
    copied = {}
    tables = [r[0] for r in source.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    with target.begin() as conn:
        for table in tables:
            columns = [(r[1], r[2] or "") for r in source.execute(f'PRAGMA table_info("{table}")')]
            rows = source.execute(f'SELECT * FROM "{table}"').fetchall()
            types = [_postgres_type(declared, [row[i] for row in rows]) for i, (_, declared) in enumerate(columns)]
            names = [name.lower() for name, _ in columns]
            ddl = ", ".join(f'"{n}" {t}' for n, t in zip(names, types))
            conn.execute(text(f'CREATE TABLE "{table.lower()}" ({ddl})'))
            if rows:
                marks = ", ".join(f":c{i}" for i in range(len(names)))
                quoted = ", ".join(f'"{n}"' for n in names)
                payload = [{f"c{i}": _cell(v, t) for i, (v, t) in enumerate(zip(row, types))} for row in rows]
                conn.execute(text(f'INSERT INTO "{table.lower()}" ({quoted}) VALUES ({marks})'), payload)
            copied[table.lower()] = len(rows)
    source.close()
    target.dispose()
    return copied
