"""Names something lying on the page may cover: the form's own print beside the box missing.

A corner folded over before the scan, a sticky note, a receipt laid on the invoice: what they
cover reads as paper, and a name read from what is left of it passes (服务有限公司 for
和丰汽车销售服务有限公司: a name has no check). The form prints its labels and rules around every
name's box, and a registered page shows them (:attr:`Alignment.on_form`); where it does not,
along a name's box or beside it, the name may be covered there.
"""

from __future__ import annotations

import numpy as np

from extractor.crops import FREE_TEXT_KINDS
from extractor.registration import reference_for
from extractor.templates import Template

BESIDE_MM = 15.0  # the stretch before and past a box whose form print is looked for
STRETCH_MM = 20.0  # the stretches looked at one by one, along the box and beside it
ABOVE_BELOW_MM = 3.0  # ... each as high as the box, and this much more above and below
MIN_FORM_MM2 = 2.0  # a stretch the form prints less in than this tells nothing
COVERED = 0.5
"""A stretch of the form showing less than this share of its print, against the page's share
over the whole form, is covered. Measured on the 187 registered fixture and fresh pages (116,
seeds outside the fixtures): one name's stretch showed less (0.45, a heavy photo's seller,
flagged already), one 0.54, every other 0.65 or more; with a corner folded 50 mm from it,
0.0-0.21 where a wrong name passed, 0.44 where the fold reached a seller's first character."""
COVERED_BY = "the form's print beside"  # how the doubt it puts on a name starts


def covered_names(template: Template, on_form: np.ndarray) -> dict[str, str]:
    """The names (free text) of ``template`` along or beside whose box the page (``on_form``:
    its ink on the reference, :attr:`Alignment.on_form`) shows the form's labels and rules,
    stretch by stretch, less than :data:`COVERED` as much as over the whole form, and why."""
    ref = reference_for(template)
    form, printed = ref.form_print
    shown = form & (on_form > 0)
    overall = np.count_nonzero(shown) / max(1, np.count_nonzero(printed))
    if overall == 0:
        return {}
    ppm = ref.px_per_mm
    height, width = printed.shape
    why: dict[str, str] = {}
    for spec in template.fields:
        if spec.kind not in FREE_TEXT_KINDS:
            continue
        box = spec.box
        rows = slice(
            max(0, round((box.y - ABOVE_BELOW_MM) * ppm)),
            min(height, round((box.y + box.h + ABOVE_BELOW_MM) * ppm)),
        )
        for x0 in np.arange(box.x - BESIDE_MM, box.x + box.w + BESIDE_MM, STRETCH_MM):
            x1 = min(x0 + STRETCH_MM, box.x + box.w + BESIDE_MM)
            columns = slice(max(0, round(x0 * ppm)), min(width, round(x1 * ppm)))
            there = np.count_nonzero(printed[rows, columns])
            if there < MIN_FORM_MM2 * ppm * ppm:
                continue
            share = np.count_nonzero(shown[rows, columns]) / there / overall
            if share < COVERED:
                along = f"{x0 - box.x:.0f} to {x1 - box.x:.0f} mm from its start"
                why[spec.name] = (
                    f"{COVERED_BY} its box is missing {along} ({share:.0%} of it shows): "
                    "something may cover the name there (a folded corner, a note)"
                )
                break
    return why
