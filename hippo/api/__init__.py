"""What faces the network: the RCP server (``rcp``), the MCP server (``mcp``), and what both share.

- ``auth``: the API key of a request -> its ``hippo.access.Principal`` (one check for both);
- ``errors``: which failure each ``hippo.errors`` error is (one table for both);
- ``guard``: the Host/Origin/Content-Type guard in front of both HTTP apps;
- ``config``: ``ServerSettings`` (``HIPPO_SERVER_*``), limits and bind policy.

Every call reaches the engine through ``hippo.access.ScopedMemory``.
"""
