"""``dataset.contiguous_slices``: which task reads which history file of an ingest."""

from __future__ import annotations

import pytest

from harness.analysis import dataset


@pytest.mark.parametrize(("sizes", "tasks"), [([], 3), ([0, 0], 2), ([5], 4), ([1, 1, 1, 1], 2), ([10, 1, 1, 1], 2),
                                              ([3, 3, 3, 3, 3, 3], 3)])
def test_slices_are_contiguous_and_within_the_tasks(sizes: list[int], tasks: int) -> None:
    got = dataset.contiguous_slices(sizes, tasks)
    assert len(got) == len(sizes) and got == sorted(got) and all(0 <= s < tasks for s in got)
    if sizes and sum(sizes) and len(set(sizes)) == 1 and len(sizes) % tasks == 0:  # even sizes: even slices
        assert all(got.count(s) == len(sizes) // tasks for s in range(tasks))
