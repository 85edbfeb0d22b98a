"""Imports stand at the top of each module: a dependency is seen where the module starts.

An import inside a function is allowed only where the module guards an optional SDK (once
per module, in one place), or at the start-up boundaries the benchmarks measure
(``toolplug/__init__.py``, the command line's ``cli/__init__.py``, ``cli/_commands.py``
and ``cli/_cache.py``). Imports under ``if TYPE_CHECKING:`` name types only. The layers
checked here are every layer of the package but the command line (its start-up boundary).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "core" / "src" / "toolplug"

CHECKED = (
    "config", "contract", "engine", "http", "integrations", "render", "runtime", "schema",
    "search", "serve", "sources", "state", "testing", "trust", "utilities",
)
ALSO = ("cli/_scaffold.py", "cli/_scaffold_openapi.py")
NOT_YET: tuple[str, ...] = ()

DEFERRED: dict[str, set[str]] = {
    # the form check of a tool's question, on its first answer (the uncached `toolplug
    # list` imports the contract, never an answer)
    "contract/_talk.py": {"jsonschema"},
    # a mounted server's prompts and resources read from the cache at load; the SDK only
    # when one is got or read
    "sources/mcp/_published.py": {"mcp.types", "mcp.shared.exceptions"},
    # the door of `toolplug serve`: the MCP SDK and the modules standing on it, once
    "serve/_server.py": {"anyio", "mcp.server.lowlevel", "toolplug.serve"},
    # `[calls] store = "redis://..."` (the redis extra)
    "serve/_shared.py": {"redis.asyncio"},
    # httpx and anyio (the http extra), on the first fetch: importing toolplug.http is free
    "http/_client.py": {"toolplug.http"},
    # the toolplug_service fixture (the testing extra)
    "testing/_kit.py": {"pytest_httpserver"},
    # the stemmer costs the uncached `toolplug list` ~20 ms; only ranking needs it
    "search/_text.py": {"snowballstemmer"},
    # load(), the measured start-up of `toolplug list`: a source's package only when the
    # configuration has one ([mcp_servers.NAME], [openapi.NAME])
    "sources/_load.py": {"toolplug.sources.mcp", "toolplug.sources.openapi"},
    # the Monty sandbox of code mode (the code extra)
    "sources/_code.py": {"pydantic_monty"},
    # the schema compiler, on the first call only (the uncached `toolplug list` skips it)
    "utilities/_validation.py": {"fastjsonschema"},
    # the half of mounting that speaks MCP (the mcp extra), when a server is first reached
    "sources/mcp/_host.py": {"toolplug.sources.mcp"},
    # a served principal's sign-in link and the redirect's exchange (on the MCP SDK), when
    # a principal first needs one (on_behalf_of = "principal")
    "sources/mcp/_principals.py": {"toolplug.sources.mcp"},
    # the OAuth flow (on the MCP SDK), when `toolplug login`/`logout` starts one
    "sources/mcp/_signin.py": {"toolplug.sources.mcp"},
    # the record in PostgreSQL (the postgres extra: psycopg), only when [record] names a
    # postgresql:// store; SQLite is the default and the standard library's
    "state/_record.py": {"toolplug.state._record_pg"},
    "state/_record_pg.py": {"psycopg"},
    # filelock (the mcp extra), when a sign-in's tokens are written or refreshed
    "state/_tokens.py": {"filelock"},
    # the network guard and the HTTP client, when a request is made: a load of 1,223 cached
    # operations (bench/openapi.py) imports no network code; PyYAML (the openapi extra)
    "sources/openapi/_api.py": {"toolplug.http", "toolplug.http._netguard"},
    "sources/openapi/_request.py": {"httpx", "toolplug.http"},
    # an API's client credentials (auth = "oauth"): the MCP SDK's OAuth client (the mcp
    # extra) and the HTTP client, when its first token is fetched
    "sources/openapi/_oauth.py": {
        "httpx2", "mcp.client.auth", "mcp.client.auth.extensions.client_credentials",
        "mcp.shared.auth", "toolplug.http",
    },
    "sources/openapi/_spec.py": {"toolplug.http", "yaml"},
    # an API's person's sign-in (auth = "oauth", authorization_code): the MCP SDK's OAuth
    # client and the flow on it (the mcp extra), when a sign-in, refresh or sign-out runs
    "sources/openapi/_signin.py": {
        "httpx2", "mcp.client.auth", "mcp.client.auth.oauth2", "mcp.client.auth.utils",
        "mcp.shared.auth", "toolplug.sources._oauth_flow",
    },
    "sources/openapi/_login.py": {"toolplug.sources._oauth_flow"},
    # keyring (the keyring extra), only where [oauth] store may keep tokens there
    "state/_keyring.py": {"keyring", "keyring.backends", "keyring.errors", "keyring.util"},
}
"""Each module's guarded imports: the modules imported inside a function, nothing else."""


def _imported_in_functions(path: Path) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for branch in node.orelse:
                visit(branch, in_function)
            return
        if in_function and isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif in_function and isinstance(node, ast.ImportFrom):
            found.add(node.module or "")
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _modules() -> list[Path]:
    paths = [p for layer in CHECKED for p in sorted((PACKAGE / layer).rglob("*.py"))]
    paths += [PACKAGE / name for name in ALSO]
    return [p for p in paths if p.relative_to(PACKAGE).as_posix() not in NOT_YET]


def test_imports_inside_functions_are_only_the_guards() -> None:
    found = {
        name: imported
        for name, imported in (
            (p.relative_to(PACKAGE).as_posix(), _imported_in_functions(p)) for p in _modules()
        )
        if imported
    }
    assert found == DEFERRED


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "late.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import decimal\n"
        "def f():\n    import json\n    from os import path\n"
        "class C:\n    async def g(self):\n        import csv\n",
        encoding="utf-8",
    )
    assert _imported_in_functions(module) == {"json", "os", "csv"}
