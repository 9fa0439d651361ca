"""The history store: closed buckets of many hosts and nights, reported over any window."""
