"""Kept for the tests that still import it: `invoke` lives in helpers.py."""

from helpers import invoke  # noqa: F401
