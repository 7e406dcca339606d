"""The stored state nearest to a point, for the finite variants' MH phase: a
``scipy.spatial.cKDTree`` built once over the bank, flattened into arrays
(:func:`flatten_tree`) and searched exactly by a compiled depth-first search (:func:`nearest`,
O(log |S|) per query, called from inside the MH loop)."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from ckam_bench import jit


def flatten_tree(points: np.ndarray, leafsize: int = 8):
    """A ``cKDTree`` over ``points`` flattened into arrays for :func:`nearest`:
    (split_dim, split, lesser, greater, start, end, indices); split_dim −1 marks a leaf."""
    tree = cKDTree(points, leafsize=leafsize)
    split_dim, split, lesser, greater, start, end = [], [], [], [], [], []
    stack = [(tree.tree, -1, 0)]
    while stack:
        node, parent, side = stack.pop()
        k = len(split_dim)
        if parent >= 0:
            (lesser if side == 0 else greater)[parent] = k
        leaf = node.split_dim == -1 or node.lesser is None
        split_dim.append(-1 if leaf else int(node.split_dim))
        split.append(0.0 if leaf else float(node.split))
        lesser.append(-1)
        greater.append(-1)
        start.append(int(node.start_idx))
        end.append(int(node.end_idx))
        if not leaf:
            stack.append((node.greater, k, 1))
            stack.append((node.lesser, k, 0))
    as_int = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return (as_int(split_dim), np.asarray(split, float), as_int(lesser), as_int(greater), as_int(start),
            as_int(end), np.array(tree.indices, dtype=np.int64))  # a copy: scipy 1.18 gives it read-only


@jit.helper
def nearest(q, points, split_dim, split, lesser, greater, start, end, indices, stack, bounds, guess):
    """Index of the point nearest to q (Euclidean; exact depth-first search of the flattened
    k-d tree, pruning a subtree when its splitting plane is farther than the best so far).
    ``guess`` (a point index, or −1) seeds the best distance: the nearest point to the current
    state is a good first bound for a proposal close to it."""
    best = math.inf
    best_i = -1
    d = q.shape[0]
    if guess >= 0:
        best = 0.0
        for a in range(d):
            diff = q[a] - points[guess, a]
            best += diff * diff
        best_i = guess
    top = 0
    stack[0] = 0
    bounds[0] = 0.0
    while top >= 0:
        node = stack[top]
        bound = bounds[top]
        top -= 1
        if bound >= best:
            continue
        if split_dim[node] < 0:
            for k in range(start[node], end[node]):
                p = indices[k]
                dist = 0.0
                for a in range(d):
                    diff = q[a] - points[p, a]
                    dist += diff * diff
                if dist < best or (dist == best and p < best_i):
                    best = dist
                    best_i = p
            continue
        diff = q[split_dim[node]] - split[node]
        near, far = (lesser[node], greater[node]) if diff < 0.0 else (greater[node], lesser[node])
        far_bound = diff * diff
        if far_bound < bound:
            far_bound = bound
        top += 1
        stack[top] = far
        bounds[top] = far_bound
        top += 1
        stack[top] = near
        bounds[top] = bound
    return best_i
