r"""A bounded store of a stream of rows, thinned by doubling its stride whenever full.

The buffer keeps row ``i`` of the stream (0-based global index) iff ``i % stride == 0``, where
``stride`` is a power of two. When a kept row would not fit, every second kept row is dropped
and the stride doubles; the kept rows are then again exactly the multiples of the new stride.
So after ``n`` rows the buffer holds

.. math:: \{ i < n : i \bmod s = 0 \}, \qquad s = \min\{2^j : \lceil n / 2^j \rceil \le C\},

i.e. between C/2 and C evenly spaced rows of the whole stream (C = capacity), whatever the
block sizes were. ``extend`` computes this state for a whole block at once (no per-row loop):
memory and the cost of reading ``data`` are bounded by C, independent of the stream length.

The runner keeps one buffer of collected samples (``samples.parquet``, density and marginal
plots, ESS) and one of per-iteration diagnostics (``diagnostics.parquet``, schedule plots).
"""

from __future__ import annotations

import numpy as np


class ThinningBuffer:
    """Bounded, evenly thinned store of float64 rows of ``width`` columns.

    Attributes
    ----------
    capacity : maximum number of kept rows (≥ 1).
    width : number of columns of every row.
    stride : current thinning stride (a power of two).
    n_seen : number of rows of the stream seen so far.
    """

    def __init__(self, capacity: int, width: int):
        capacity, width = int(capacity), int(width)
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.capacity = capacity
        self.width = width
        self.stride = 1
        self.n_seen = 0
        self._rows = np.empty((capacity, width))
        self._len = 0

    def __len__(self) -> int:
        return self._len

    @property
    def data(self) -> np.ndarray:
        """The kept rows in stream order, shape (len, width) (a read-only view)."""
        view = self._rows[: self._len]
        view.flags.writeable = False
        return view

    @property
    def indices(self) -> np.ndarray:
        """Global stream index of each kept row: 0, stride, 2·stride, …"""
        return np.arange(self._len, dtype=np.int64) * self.stride

    def extend(self, rows) -> None:
        """Append a block of rows, shape (k, width) (k may be 0; (k,) when width is 1)."""
        rows = np.asarray(rows, dtype=float)
        if rows.ndim == 1 and self.width == 1:
            rows = rows[:, None]
        if rows.ndim != 2 or rows.shape[1] != self.width:
            raise ValueError(f"rows must have shape (k, {self.width}), got {rows.shape}")
        k = rows.shape[0]
        if k == 0:
            return
        kept = self._advance(k)
        new = rows[kept]
        self._rows[self._len : self._len + new.shape[0]] = new
        self._len += new.shape[0]

    def extend_columns(self, columns) -> None:
        """Append a block given as ``width`` columns of equal length k, gathering only the rows
        the buffer keeps (cheaper than stacking the whole block when the stride is large)."""
        if len(columns) != self.width:
            raise ValueError(f"expected {self.width} columns, got {len(columns)}")
        k = len(columns[0])
        if k == 0:
            return
        kept = self._advance(k)
        new = np.column_stack([np.asarray(c, dtype=float)[kept] for c in columns])
        self._rows[self._len : self._len + new.shape[0]] = new
        self._len += new.shape[0]

    def _advance(self, k: int) -> slice:
        """Account for k more stream rows (thinning the kept ones if needed); return the slice
        of the new block that is kept."""
        n_total = self.n_seen + k
        stride = self.stride
        while -(-n_total // stride) > self.capacity:  # ceil(n_total / stride) rows would be kept
            stride *= 2
        if stride != self.stride:
            # Kept rows are the multiples of the old stride; keep those of the new one.
            kept = self._rows[: self._len : stride // self.stride]
            self._len = kept.shape[0]
            self._rows[: self._len] = kept
            self.stride = stride
        first = -(-self.n_seen // stride) * stride  # first multiple of stride in the block
        start = first - self.n_seen
        self.n_seen = n_total
        return slice(start, k, stride)

    def state_dict(self) -> dict:
        """Everything needed to rebuild the buffer: numpy arrays and ints (no pickle)."""
        return {
            "capacity": self.capacity,
            "width": self.width,
            "stride": self.stride,
            "n_seen": self.n_seen,
            "data": self._rows[: self._len].copy(),
        }

    @classmethod
    def from_state(cls, state: dict) -> ThinningBuffer:
        """Rebuild a buffer from :meth:`state_dict` output."""
        buf = cls(int(state["capacity"]), int(state["width"]))
        data = np.asarray(state["data"], dtype=float).reshape(-1, buf.width)
        stride, n_seen = int(state["stride"]), int(state["n_seen"])
        if data.shape[0] != -(-n_seen // stride) or data.shape[0] > buf.capacity:
            raise ValueError(
                f"inconsistent buffer state: {data.shape[0]} rows for n_seen={n_seen}, "
                f"stride={stride}, capacity={buf.capacity}"
            )
        buf._rows[: data.shape[0]] = data
        buf._len = data.shape[0]
        buf.stride = stride
        buf.n_seen = n_seen
        return buf
