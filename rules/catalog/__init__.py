"""The rule catalog; importing this package registers every rule."""

from govern.rules.catalog import batch, meta, qc, runtime

__all__ = ["batch", "meta", "qc", "runtime"]
