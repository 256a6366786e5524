"""Helpers shared by the test suite: a private Redis server and real worker processes."""
