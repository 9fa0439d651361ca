"""Dependency cycles among jobs, found without recursion (catalogs can be deep)."""

from __future__ import annotations

from collections.abc import Mapping


def find_cycle(graph: Mapping[str, tuple[str, ...]]) -> list[str] | None:
    """A cycle as ``[a, b, ..., a]``, or None. Iterative DFS (catalogs can be deep)."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for root in graph:
        if state.get(root):
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        state[root] = 1
        while stack:
            node, index = stack[-1]
            deps = graph.get(node, ())
            if index < len(deps):
                stack[-1] = (node, index + 1)
                nxt = deps[index]
                if state.get(nxt) == 1:
                    return [*path[path.index(nxt) :], nxt]
                if not state.get(nxt):
                    state[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                state[node] = 2
                stack.pop()
                path.pop()
    return None
