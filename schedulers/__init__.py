"""Nightly summarization: policies, catalog, and the scheduling service."""
