"""`opsbot mcp`: opsbot's own read-only incident tools served over MCP (stdio), for an engineer's IDE assistant."""
