"""Field accuracy of a running service: ``roi eval``'s scoring over fixtures with ground truth,
each document sent to ``POST /extract`` (e.g. a service on a GPU, next to the CPU's own figures).

    python -m bench.service_eval --url http://127.0.0.1:8000 fixtures/medium
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import httpx

from extractor.errors import InputError
from extractor.evaluate import evaluate
from extractor.result import DocumentResult


class ServiceExtractor:
    """What :func:`~extractor.evaluate.evaluate` calls, answered by the service over HTTP."""

    def __init__(self, url: str, timeout_s: float = 120.0) -> None:
        self.client = httpx.Client(base_url=url.rstrip("/"), timeout=timeout_s)

    def extract(self, source: str | Path, template: str) -> DocumentResult:
        path = Path(source)
        response = self.client.post(
            "/extract",
            params={"template": template, "name": path.name},
            content=path.read_bytes(),
        )
        if response.status_code != 200:
            raise InputError(f"{path.name}: {response.status_code} {response.text[:200]}")
        return DocumentResult.model_validate(response.json())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.service_eval")
    parser.add_argument("--url", required=True)
    parser.add_argument("roots", nargs="+", help="fixture folders with ground truth")
    args = parser.parse_args(argv)
    service = ServiceExtractor(args.url)
    for root in args.roots:
        report = evaluate(Path(root), extractor=service)  # type: ignore[arg-type]
        tally = report.overall
        print(
            f"{root}: {tally.exact}/{tally.fields} fields right, wrong but valid "
            f"{tally.wrong_valid}, {report.documents} documents, errors {len(report.errors)} "
            f"({report.seconds} s)",
            flush=True,
        )
        for error in report.errors:
            print("  ", error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
