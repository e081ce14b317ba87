"""The ``roi`` command line: extract, templates, eval, synth, batch, parties, models, serve."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from extractor.cpus import usable_cpus
from extractor.engines import ENGINES
from extractor.errors import InputError, RoiError

if TYPE_CHECKING:
    from extractor.pipeline import Extractor

EXIT_OK, EXIT_REVIEW, EXIT_ERROR = 0, 1, 2
DEVICES = ("cpu", "cuda", "tensorrt")
DEVICE_HELP = (
    "where the ppocr recogniser runs: ONNX Runtime's CPU, CUDA or TensorRT provider "
    "(the last two need the gpu extra); on a CPU with AMX or AVX-512 BF16, cpu runs the small "
    "model on OpenVINO in bfloat16 (ROI_CPU_RUNTIME=onnxruntime|openvino|auto)"
)

PARTIES_HELP = (
    "a CSV of known parties (columns tax_id, name: your vendor master) that names and tax ids "
    "are checked against; names read as registered also skip the slower model"
)
LEARN_PARTIES_HELP = (
    "register, for the documents after them, the parties (tax id and name) read valid in two "
    "documents of this run: names read as learned skip the slower model (default: %(default)s)"
)
CHECK_PRINT_HELP = (
    "read the print of the fields the QR code states too, and of the total in words where the "
    "total is confirmed, and flag a field whose print says otherwise (by default they are taken "
    "from the code, and the words from the total, unread: faster)"
)


def _extractor(args: argparse.Namespace, **options: object) -> Extractor:
    """The Extractor of ``roi extract`` and ``roi eval``: the options they share from ``args``."""
    from extractor.pipeline import Extractor

    return Extractor(
        engine=args.engine,
        fallback=args.fallback,
        parties=args.parties,
        check_print=args.check_print,
        learn_parties=args.learn_parties,
        **options,
    )


def _extract(args: argparse.Namespace) -> int:
    from rich.console import Console

    from extractor.display import document_table

    options: dict[str, object] = {"model": args.model} if args.model else {}
    if provider := _provider(args):
        options["provider"] = provider
    extractor = _extractor(args, dpi=args.dpi, **options)
    if args.template != "auto":
        extractor.templates.get(args.template)  # unknown template: fail before reading a file
    console = Console(width=None if sys.stdout.isatty() else 140)
    status = EXIT_OK
    for file in _documents(args.files):
        try:
            if file == "-":  # a document piped in: cat scan.jpg | roi extract - -t auto
                result = extractor.extract(sys.stdin.buffer.read(), args.template, name="<stdin>")
            else:
                result = extractor.extract(file, args.template)
        except RoiError as exc:
            said = str(exc)  # errors about the path itself (no such file) name it already
            print(
                f"roi: {said if said.startswith(f'{file}:') else f'{file}: {said}'}",
                file=sys.stderr,
            )
            status = EXIT_ERROR
            continue
        if args.json:
            print(result.model_dump_json(indent=2))
        else:
            console.print(document_table(result))
        if args.strict and not result.valid and status == EXIT_OK:
            status = EXIT_REVIEW
    return status


def _documents(names: list[str]) -> list[str]:
    """``roi extract``'s files, a folder named standing for the documents in it (recursively,
    as ``roi batch`` finds them); a folder holding none is an error."""
    from extractor.batch.inputs import documents_in

    files = []
    for name in names:
        if name == "-" or not Path(name).is_dir():
            files.append(name)
        elif found := documents_in(Path(name)):
            files.extend(map(str, found))
        else:
            raise InputError(
                f"{name}: no PDF, OFD, PNG, JPEG, TIFF, HEIC, WebP or AVIF in this folder"
            )
    return files


def _templates(args: argparse.Namespace) -> int:
    from extractor.templates import TemplateStore

    store = TemplateStore()
    if args.name:
        print(
            json.dumps(store.get(args.name).model_dump(mode="json"), ensure_ascii=False, indent=2)
        )
        return EXIT_OK
    for template in store.all():
        print(
            f"{template.name:<24} v{template.version}  "
            f"{len(template.fields):>2} fields  {template.title}"
        )
    return EXIT_OK


def _eval(args: argparse.Namespace) -> int:
    from extractor.evaluate import evaluate, print_report

    report = evaluate(
        Path(args.dir), template=args.template, extractor=_extractor(args), quiet=args.quiet
    )
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print_report(report)
    return EXIT_OK


def _provider(args: argparse.Namespace) -> str | None:
    """The ppocr engine's ONNX Runtime provider from ``--device`` (None: not given)."""
    if args.device is None or (args.device == "cpu" and args.engine != "ppocr"):
        return None
    if args.engine != "ppocr":
        raise RoiError(f"--device {args.device} needs the ppocr engine, not {args.engine}")
    return str(args.device)


def _batch(args: argparse.Namespace) -> int:
    from extractor.batch import BatchOptions, print_summary, run_batch

    opts = BatchOptions(
        inputs=args.inputs,
        template=args.template,
        out_dir=Path(args.out),
        workers=args.workers,
        force=args.force,
        quiet=args.quiet,
        ray=args.ray is not None,
        ray_address=args.ray or None,
        engine=args.engine,
        dpi=args.dpi,
        fallback=args.fallback,
        doc_timeout=args.doc_timeout,
        provider=_provider(args),
        parties=args.parties,
        check_print=args.check_print,
        learn_parties=args.learn_parties,
    )
    summary = run_batch(opts)
    print_summary(summary, opts.out_dir, quiet=args.quiet)
    return EXIT_ERROR if summary.failed else EXIT_OK


def _parties_learn(args: argparse.Namespace) -> int:
    from extractor.parties import learn_parties, write_parties
    from extractor.templates import TemplateStore

    if args.min_seen < 1:
        raise RoiError("--min-seen must be at least 1")
    learned = learn_parties(_results(args.results), TemplateStore(), args.min_seen)
    if args.out == "-":
        write_parties(learned.names, sys.stdout)
    else:
        with open(args.out, "w", encoding="utf-8", newline="") as fh:
            write_parties(learned.names, fh)
    print(
        f"roi: {len(learned.names)} parties registered; left out: {learned.rare} read valid in "
        f"fewer than {args.min_seen} documents, {len(learned.conflicts)} tax ids read with "
        "names none of which outvotes the others",
        file=sys.stderr,
    )
    for tax_id, names in learned.conflicts.items():
        readings = ", ".join(f"{name} ({count})" for name, count in names.items())
        print(f"roi:   {tax_id}: {readings}", file=sys.stderr)
    return EXIT_OK


def _results(paths: Sequence[str]) -> Iterator[dict[str, Any]]:
    """``DocumentResult`` JSON from files: ``.jsonl`` (one per line, as ``roi batch`` writes),
    or a document or a list of them (``roi extract --json``)."""
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
            if path.endswith(".jsonl"):
                yield from (json.loads(line) for line in text.splitlines() if line.strip())
                continue
            data = json.loads(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RoiError(f"{path}: not readable as results JSON: {exc}") from exc
        yield from data if isinstance(data, list) else [data]


def _synth(args: argparse.Namespace) -> int:
    from extractor.synth.__main__ import main as synth_main

    return synth_main(args.synth_args)


def _models(args: argparse.Namespace) -> int:
    from extractor.models import convert_ppocr_onnx

    done = convert_ppocr_onnx(
        model=args.model,
        onnx_path=args.onnx,
        out_dir=args.out,
        keys_path=args.keys,
        force=args.force,
    )
    if done.reused:
        print(f"{done.out_dir}: already converted from {done.source} (--force to redo)")
    else:
        print(
            f"{done.out_dir}: converted {done.source} in {done.seconds:.1f} s; "
            f"{done.classes} classes, max difference from ONNX Runtime {done.max_abs_diff:.1e}"
        )
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from service.server import serve, settings_from_args

    try:
        settings = settings_from_args(args)
    except ValueError as exc:
        print(f"roi: {exc}", file=sys.stderr)
        return EXIT_ERROR
    serve(settings)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roi", description="Extract key fields from scanned invoices, ROI-first."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ex = sub.add_parser(
        "extract",
        help="extract fields from documents (PDF, OFD, PNG, JPEG, TIFF, HEIC, WebP, AVIF)",
    )
    ex.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="documents or folders of them; - reads one from standard input",
    )
    ex.add_argument(
        "--template",
        "-t",
        required=True,
        help="template name (see `roi templates`), or auto to pick one per page",
    )
    out = ex.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the result as JSON")
    out.add_argument("--table", action="store_true", help="print a table per page (default)")
    ex.add_argument("--engine", choices=ENGINES, default="ppocr")
    ex.add_argument(
        "--model",
        choices=("PP-OCRv6", "PP-OCRv4"),
        help="ppocr recognition model (PP-OCRv4 needs the ppocrv4 extra); default PP-OCRv6",
    )
    ex.add_argument("--dpi", type=int, default=200, help="PDF rendering resolution")
    ex.add_argument("--device", choices=DEVICES, default="cpu", help=DEVICE_HELP)
    ex.add_argument("--strict", action="store_true", help="exit 1 when any field needs review")
    ex.add_argument(
        "--fallback",
        choices=("auto", "never", "always"),
        default="auto",
        help="full-page OCR when a page does not match or a required field fails (auto)",
    )
    ex.add_argument("--parties", type=Path, metavar="CSV", help=PARTIES_HELP)
    ex.add_argument("--check-print", action="store_true", help=CHECK_PRINT_HELP)
    ex.add_argument(
        "--learn-parties",
        action=argparse.BooleanOptionalAction,
        default=False,
        help=LEARN_PARTIES_HELP,
    )
    ex.set_defaults(func=_extract)

    tp = sub.add_parser("templates", help="list templates, or show one as JSON")
    tp.add_argument("name", nargs="?")
    tp.set_defaults(func=_templates)

    ev = sub.add_parser("eval", help="score extraction against fixtures with ground truth")
    ev.add_argument(
        "dir",
        help="folder searched recursively for documents X.pdf, X.jpg... with X.json beside them: "
        '{"template": "vat_invoice", "pages": [{"page": 0, "fields": {"total": "106.00", ...}}]} '
        "(page 0-based; a page's own template, null for a page that is no invoice)",
    )
    ev.add_argument("--template", default=None, help="template name (default: the truth's)")
    ev.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    ev.add_argument("--engine", choices=ENGINES, default="ppocr")
    ev.add_argument("--json", action="store_true")
    ev.add_argument("--fallback", choices=("auto", "never", "always"), default="auto")
    ev.add_argument("--parties", type=Path, metavar="CSV", help=PARTIES_HELP)
    ev.add_argument("--check-print", action="store_true", help=CHECK_PRINT_HELP)
    ev.add_argument(
        "--learn-parties",
        action=argparse.BooleanOptionalAction,
        default=False,
        help=LEARN_PARTIES_HELP,
    )
    ev.set_defaults(func=_eval)

    sy = sub.add_parser("synth", help="generate synthetic invoices with ground truth")
    sy.add_argument("synth_args", nargs=argparse.REMAINDER)
    sy.set_defaults(func=_synth)

    ba = sub.add_parser("batch", help="extract a folder of scans: resumable, local pool or Ray")
    ba.add_argument("inputs", nargs="+", metavar="INPUT", help="files, folders or glob patterns")
    ba.add_argument(
        "--template",
        "-t",
        required=True,
        help="template name (see `roi templates`), or auto to pick one per page",
    )
    ba.add_argument("--out", "-o", required=True, help="output folder (results, manifest)")
    ba.add_argument("--workers", "-w", type=int, default=usable_cpus())
    ba.add_argument("--force", action="store_true", help="redo documents already done")
    ba.add_argument("--quiet", "-q", action="store_true", help="no progress; summary on failure")
    ba.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run on Ray: a local instance, or the cluster at ADDRESS",
    )
    ba.add_argument("--engine", choices=ENGINES, default="ppocr")
    ba.add_argument("--dpi", type=int, default=200, help="PDF rendering resolution")
    ba.add_argument(
        "--device",
        choices=DEVICES,
        default=None,
        help=DEVICE_HELP + "; default cpu, or cuda on a Ray cluster with GPUs. Each worker decodes "
        "and registers on its CPU core before its GPU reads the crops: on one GPU give about as "
        "many workers as cores (each held 5.6-6.5 GB of an H200's memory)",
    )
    ba.add_argument(
        "--fallback",
        choices=("auto", "never", "always"),
        default="auto",
        help="full-page OCR when a page does not match or a required field fails (auto); "
        "an --out folder keeps the setting of its first run",
    )
    ba.add_argument(
        "--doc-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="kill a document's worker after this long and record the document as failed "
        "(a pathological page); 0: no limit; local pool only (default: %(default)g)",
    )
    ba.add_argument("--parties", type=Path, metavar="CSV", help=PARTIES_HELP)
    ba.add_argument(
        "--check-print",
        action="store_true",
        help=CHECK_PRINT_HELP + "; an --out folder keeps the setting of its first run",
    )
    ba.add_argument(
        "--learn-parties",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=LEARN_PARTIES_HELP,
    )
    ba.set_defaults(func=_batch)

    pa = sub.add_parser("parties", help="party registries: learn one from past results")
    pa_sub = pa.add_subparsers(dest="action", required=True)
    le = pa_sub.add_parser(
        "learn",
        help="a registry CSV (for --parties) of the parties past results read valid, name and "
        "tax id both, in several documents alike",
    )
    le.add_argument("results", nargs="+", metavar="RESULTS", help="results.jsonl or --json files")
    le.add_argument(
        "--min-seen",
        type=int,
        default=2,
        metavar="N",
        help="documents that must read a party alike (default: %(default)s)",
    )
    le.add_argument("-o", "--out", default="-", help="CSV to write (default: standard output)")
    le.set_defaults(func=_parties_learn)

    mo = sub.add_parser("models", help="make model files from what packages ship")
    mo_sub = mo.add_subparsers(dest="action", required=True)
    cv = mo_sub.add_parser(
        "convert", help="PP-OCR rec ONNX -> Paddle inference model for --engine paddle"
    )
    cv.add_argument("--model", default="PP-OCRv6", help="packaged model (PP-OCRv6, PP-OCRv4)")
    cv.add_argument("--onnx", default=None, help="another PP-OCR rec .onnx file instead")
    cv.add_argument("--keys", default=None, help="character list, when the ONNX has none")
    cv.add_argument("--out", default=None, help="output folder (default: ~/.cache/roi/models/…)")
    cv.add_argument("--force", action="store_true", help="convert again even if up to date")
    cv.set_defaults(func=_models)

    from service.server import add_arguments as add_serve_arguments

    se = sub.add_parser("serve", help="run the HTTP API (see docs/service.md)")
    add_serve_arguments(se)
    se.set_defaults(func=_serve)

    from extractor.authoring.cli import add_template_parser

    add_template_parser(sub)  # roi template init | preview | check
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RoiError as exc:
        print(f"roi: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
