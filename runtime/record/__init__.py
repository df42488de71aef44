"""A record and its generated code: guard checks (Python and native), the mock, codegen helpers."""
