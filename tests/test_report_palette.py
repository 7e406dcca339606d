"""One palette for the whole report (issue 30 §3): distinct colours for up to twelve
configuration groups, none near-invisible on white, and a group label keeps its colour in
every figure of the report."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from matplotlib.colors import to_hex, to_rgb

from ckam_bench.report import aggregate as agg
from ckam_bench.report import drawing, generic, paper_ckam
from tests.test_report import make_run


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(colour) -> float:
    """Relative luminance (WCAG) of an sRGB colour."""
    r, g, b = (_linear(c) for c in to_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_on_white(colour) -> float:
    return 1.05 / (luminance(colour) + 0.05)


def lab(colour) -> np.ndarray:
    """CIELAB (D65) of an sRGB colour."""
    rgb = np.array([_linear(c) for c in to_rgb(colour)])
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ rgb / np.array([0.9505, 1.0, 1.089])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_twelve_distinct_colours_none_faint_on_white():
    assert len(drawing.PALETTE) >= 12 and len(set(drawing.PALETTE)) == len(drawing.PALETTE)
    for colour in drawing.PALETTE:
        assert contrast_on_white(colour) >= 2.0, colour
    for a, b in itertools.combinations(drawing.PALETTE, 2):
        assert np.linalg.norm(lab(a) - lab(b)) >= 20.0, (a, b)
    assert contrast_on_white("#c7c7c7") < 2.0  # the old light grey of NUTS fails the test


NUTS = {"_target_": "ckam_bench.samplers.nuts.NUTS", "target_accept": 0.8}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("palette")
    for seed in (0, 1):
        for sampler in ("rw", "am", "ckam"):
            make_run(root, "bimodal", sampler, seed=seed, n_samples=200, n_diag=300)
        make_run(root, "bimodal", "nuts", seed=seed, n_samples=200, n_diag=300,
                 sampler_node=NUTS)
        make_run(root, "gmm2d", "rw", seed=seed, n_samples=200, n_diag=300)
    return agg.load_results(root)


def _line_colours(figure) -> dict[str, str]:
    """Legend label (without its seed count) -> line colour, over every axes."""
    out = {}
    for ax in figure.axes:
        for line in ax.get_lines():
            label = line.get_label()
            if not label.startswith("_") and "(n=" in label:
                out[label.split(" (n=")[0]] = to_hex(line.get_color())
    return out


def test_a_label_has_one_colour_in_every_figure(results):
    colours = drawing.sampler_colours(results)
    assert list(colours) == ["rw", "am", "ckam", "nuts"]  # the report's order
    assert len(set(colours.values())) == 4
    assert all(contrast_on_white(c) >= 2.0 for c in colours.values())
    settings = drawing.Settings()
    for target in ("bimodal", "gmm2d"):
        kl = next(d for d in generic.metric_figures(results, settings, target)
                  if d.stem == f"{target}_metric_kl")
        seen = _line_colours(kl.figure)
        assert seen and all(seen[label] == colours[label] for label in seen), seen
    fig, _ = paper_ckam.figure_kl_all(results, settings, "bimodal")
    seen = _line_colours(fig)
    assert set(seen) == {"rw", "am", "ckam", "nuts"}
    assert all(seen[label] == colours[label] for label in seen), seen
    (pairs,) = generic.pair_figures(results, settings, "bimodal")
    dots = {to_hex(c.get_facecolor()[0]) for ax in pairs.figure.axes for c in ax.collections
            if len(c.get_facecolor())}
    assert dots == set(colours.values())


def test_the_same_label_on_two_targets_and_unknown_names(results):
    assert drawing.label_colour(results, "rw") == drawing.sampler_colours(results)["rw"]
    gmm_rw = results.select(target="gmm2d", sampler="rw")[0]
    assert drawing.run_colour(results, gmm_rw) == drawing.sampler_colours(results)["rw"]
    assert drawing.colour("someone_else") in drawing.PALETTE
    assert drawing.colour("someone_else") == drawing.colour("someone_else")
