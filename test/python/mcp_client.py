"""The official Python MCP client (`mcp`), driven by the TypeScript tests over stdin/stdout.

    python mcp_client.py <url> <mode> <plan.json>

`mode` is the client's own: `legacy` (initialize, a session), `auto` (discover, then the newest
version both speak) or `2026-07-28` (pinned). The plan is a JSON list of steps, each run in
order and answered with one JSON line on stdout:

    {"op": "era"}                                   → {"ok": true, "value": "modern" | "legacy"}
    {"op": "tools"}                                 → the tool names
    {"op": "call", "tool": t, "args": {...}}        → the result (content, structuredContent,
                                                      isError) and the progress values seen
    {"op": "whoami"}                                → the text of tool "whoami"

Elicitation is answered {action: accept, content: {name: Ann}}, sampling with the text "Paris".
With `--oauth`, the client logs in with the SDK's own OAuth support (RFC 9728 discovery,
dynamic registration, PKCE): the authorization URL goes out as `AUTHORIZE <url>` and the test
answers on stdin with the redirect it reached (`CALLBACK <url>`), as a browser would.

A failed step is {"ok": false, "error": "..."} and the plan goes on; the process exits 0 once
the plan has run (2 when the client could not connect).
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://127.0.0.1:7777/callback"


def emit(line: dict[str, Any] | str) -> None:
    sys.stdout.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    sys.stdout.flush()


async def on_elicitation(_context: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ann"})


async def on_sampling(_context: Any, _params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="Paris"), model="fixture-model")


class MemoryStorage:
    """Tokens and the registered client, for this process only."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def read_line() -> str:
    return (await anyio.to_thread.run_sync(sys.stdin.readline)).strip()


async def redirect(url: str) -> None:
    emit(f"AUTHORIZE {url}")


async def callback() -> AuthorizationCodeResult:
    line = await read_line()
    if not line.startswith("CALLBACK "):
        raise RuntimeError(f"expected CALLBACK <url>, got {line!r}")
    query = parse_qs(urlparse(line[len("CALLBACK ") :]).query)
    if "code" not in query:
        raise RuntimeError(f"the authorization ended without a code: {query}")
    return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0])


def result_of(result: types.CallToolResult) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run_step(client: Client, step: dict[str, Any]) -> dict[str, Any]:
    op = step["op"]
    if op == "era":
        version = client.protocol_version
        return {"ok": True, "value": "modern" if version >= "2026" else "legacy", "version": version}
    if op == "tools":
        return {"ok": True, "value": [tool.name for tool in (await client.list_tools()).tools]}
    if op in ("call", "whoami"):
        progress: list[float] = []

        async def on_progress(value: float, _total: float | None, _message: str | None) -> None:
            progress.append(value)

        tool = step.get("tool", "whoami")
        result = await client.call_tool(tool, step.get("args", {}), progress_callback=on_progress)
        return {"ok": True, "value": result_of(result), "progress": progress}
    raise ValueError(f"unknown op {op!r}")


async def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    url, mode, plan = args[0], args[1], json.loads(args[2])
    server: Any = url
    if "--oauth" in sys.argv:
        auth = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT_URI], client_name="python-mcp-client", grant_types=["authorization_code", "refresh_token"], response_types=["code"]),
            storage=MemoryStorage(),
            redirect_handler=redirect,
            callback_handler=callback,
        )
        server = streamable_http_client(url, http_client=httpx2.AsyncClient(auth=auth, timeout=30))
    try:
        client = Client(server, mode=mode, elicitation_callback=on_elicitation, sampling_callback=on_sampling, cache=None)
        async with client:
            for step in plan:
                try:
                    emit(await run_step(client, step))
                except Exception as err:  # a failed step is reported, the plan goes on
                    emit({"ok": False, "error": f"{type(err).__name__}: {err}"})
    except Exception as err:
        emit({"ok": False, "error": f"connect: {type(err).__name__}: {err}"})
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
