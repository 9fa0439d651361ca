"""The rule catalog: query-cache and batching policy for lint and for digests."""
