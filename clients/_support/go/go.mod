module mcp-client-matrix/clients/_support/go

go 1.25.0
