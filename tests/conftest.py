"""Fixtures shared by test modules."""

from collections.abc import Callable

import pytest

from extractor.crops import Crop
from extractor.loading import iter_pages
from extractor.pipeline import Extractor, PreparedPage
from extractor.result import Timings

CropsOf = Callable[[Extractor, bytes, str], list[Crop]]


@pytest.fixture(scope="session")
def crops_of() -> CropsOf:
    """A document's first page registered and cut into its template's field crops, as the
    pipeline cuts them before recognition: for checks that ask the recogniser about a crop
    (its likelihoods) rather than rely on how it reads a blurred page on this machine's CPU."""

    def crops(extractor: Extractor, data: bytes, template: str) -> list[Crop]:
        page = next(iter_pages(data, dpi=extractor.dpi))
        prepared = extractor.prepare(page, extractor.templates.get(template), Timings())
        assert isinstance(prepared, PreparedPage) and prepared.alignment.matched
        return list(prepared.crops)

    return crops
