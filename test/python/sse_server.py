"""A legacy HTTP+SSE MCP server (2024-11-05) of the Python SDK: `MCPServer` run with its `sse`
transport (uvicorn, GET /sse, POST /messages/?session_id=...), on 127.0.0.1:<port>.

Tools: echo {text} -> "py: <text>". Started by test/sse/real-servers.test.ts:
`python test/python/sse_server.py <port>`.
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("py-sse")


@server.tool()
def echo(text: str) -> str:
    """Echoes its text."""
    return f"py: {text}"


if __name__ == "__main__":
    server.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
