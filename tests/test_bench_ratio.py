"""The benches' load ratio and its interval (bench/bench_browser.py: print_ratio, ratio_interval, p95):
what `bash dev.sh bench` says about the start-up budget rests on them, so they are checked against
figures worked out by hand here, not against their own output."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_browser as bb  # noqa: E402


def test_rounds_with_one_ratio_give_an_interval_of_that_ratio():
    floor = [1000, 1100, 900, 1200, 950]
    real = [f * 1.25 for f in floor]
    low, high = bb.ratio_interval(real, floor)
    assert abs(low - 1.25) < 1e-12 and abs(high - 1.25) < 1e-12


def test_the_interval_holds_the_ratio_and_widens_with_the_spread():
    floor = [1000.0] * 10
    tight = [1100 + d for d in (-10, 10, -5, 5, 0, -10, 10, -5, 5, 0)]
    loose = [1100 + d for d in (-200, 200, -100, 100, 0, -200, 200, -100, 100, 0)]
    (tl, th), (ll, lh) = bb.ratio_interval(tight, floor), bb.ratio_interval(loose, floor)
    assert tl <= 1.1 <= th and ll <= 1.1 <= lh  # the median real is 1100, the floor 1000
    assert th - tl < 0.03 < lh - ll  # every resample's ratio is within 1.09-1.11 for the tight rounds


def test_the_interval_is_the_same_for_the_same_loads():
    real, floor = [1200, 1000, 1500, 1100, 1300, 1250], [1000, 1050, 1100, 990, 1020, 1300]
    assert bb.ratio_interval(real, floor) == bb.ratio_interval(list(real), list(floor))


def test_print_ratio_returns_the_medians_ratio_the_rounds_median_and_the_interval(capsys):
    real, floor = [1200, 1000, 1500], [1000, 1000, 1000]
    ratio, rounds, interval = bb.print_ratio(real, floor)
    assert ratio == statistics.median(real) / statistics.median(floor) == 1.2
    assert rounds == 1.2  # the rounds' ratios 1.2, 1.0 and 1.5
    assert interval == bb.ratio_interval(real, floor)  # the one printed, handed back
    out = capsys.readouterr().out
    assert "NOT met" in out and "90% interval" in out and "the budget is" in out


def test_p95_is_the_nearest_rank_to_a_tenth_of_a_millisecond():
    xs = [float(k) for k in range(1, 30)] + [33.00000000000091]  # 30 moves; WebKit's whole-ms clock
    assert bb.p95(xs) == 29.0  # nearest rank: the 29th of 30 (the second largest)
    assert bb.p95([33.00000000000091] * 30) == 33.0 <= 33  # as printed, within a 33 ms budget
