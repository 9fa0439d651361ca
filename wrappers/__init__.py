"""Runners behind ``govern run``: slow-log governance around heavy jobs."""
