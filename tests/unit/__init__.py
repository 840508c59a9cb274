"""Unit tests: no runtime, no kernel, no browser (recorded fixtures in tests/data)."""
