"""``roi template init | preview | check`` (registered by :mod:`extractor.cli`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


def _init(args: argparse.Namespace) -> int:
    from extractor.authoring.propose import init_template
    from extractor.templates import default_templates_dir

    out = Path(args.out) if args.out else default_templates_dir()
    result = init_template(
        args.sample, args.name, out, dpi=args.dpi, title=args.title or "", overwrite=args.force
    )
    t = result.template
    print(f"wrote {result.yaml_path} and {result.image_path}")
    print(
        f"page {t.page.width_mm:g} x {t.page.height_mm:g} mm at {t.registration.dpi} dpi"
        + (f", deskewed by {result.skew_deg:+.2f}°" if result.skew_deg else "")
        + f"; {len(result.proposals)} fields proposed in {result.seconds:.1f} s:"
    )
    for p in result.proposals:
        box = ", ".join(f"{v:.1f}" for v in p.box)
        print(f"  {p.name:<18} {p.kind.value:<12} [{box}]  {p.label} -> {p.sample!r} ({p.where})")
    print("registration: ruled frame found" if result.has_frame else "registration: NO FRAME")
    for note in result.notes:
        print(f"note: {note}")
    print(
        f"next: edit {result.yaml_path.name} (keep, rename or delete fields), then\n"
        f"  roi template preview {t.name} SCAN -o preview.png\n  roi template check {t.name} SCAN"
    )
    return EXIT_OK


def _preview(args: argparse.Namespace) -> int:
    import cv2

    from extractor.authoring.check import load_for_check
    from extractor.authoring.preview import preview

    template = load_for_check(args.name)
    start = time.perf_counter()
    shot = preview(template, args.scan, side_by_side=args.side_by_side, fallback=args.fallback)
    if not cv2.imwrite(args.output, shot.image):
        print(f"roi: cannot write {args.output}", file=sys.stderr)
        return EXIT_ERROR
    h, w = shot.image.shape[:2]
    print(f"wrote {args.output} ({w} x {h} px) in {time.perf_counter() - start:.1f} s")
    if shot.page is not None:
        page = shot.page
        print(f"page: {page.status}, match {page.match_score:.2f}")
        for name, f in page.fields.items():
            mark = "ok " if f.valid else "BAD"
            print(f"  {mark} {name:<18} {f.value!s:<24} {f.confidence:.2f}  {'; '.join(f.errors)}")
        if not shot.aligned:
            print("the scan did not register: the picture shows the reference", file=sys.stderr)
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from extractor.authoring.check import check_template

    start = time.perf_counter()
    report = check_template(args.name, args.scans, fallback=args.fallback)
    console = Console(width=None if sys.stdout.isatty() else 140)
    if report.template is not None:
        t = report.template
        console.print(
            f"template {t.name}: {len(t.fields)} fields, page {t.page.width_mm:g} x "
            f"{t.page.height_mm:g} mm, schema ok"
        )
    for where, page in report.pages:
        table = Table(title=f"{where}: {page.status} (match {page.match_score:.2f})")
        for col in ("field", "value", "valid", "conf", "source", "errors"):
            table.add_column(col)
        for name, f in page.fields.items():
            table.add_row(
                name,
                f.value or "",
                "yes" if f.valid else "[red]no[/red]",
                f"{f.confidence:.2f}",
                f.source,
                "; ".join(f.errors),
            )
        console.print(table)
    for problem in report.problems:
        style = "red" if problem.severity == "error" else "yellow"
        console.print(f"[{style}]{problem}[/{style}]", highlight=False)
    errors = sum(p.severity == "error" for p in report.problems)
    warnings = len(report.problems) - errors
    console.print(
        f"{'FAILED' if errors else 'ok'}: {errors} problem(s), {warnings} warning(s) "
        f"in {time.perf_counter() - start:.1f} s",
        highlight=False,
    )
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def add_template_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The ``template`` command group."""
    tp = sub.add_parser("template", help="make and check templates: init, preview, check")
    tsub = tp.add_subparsers(dest="action", required=True)

    it = tsub.add_parser("init", help="propose a template from a sample scan or PDF")
    it.add_argument("sample", help="a sample document (PDF, OFD, an image); its first page")
    it.add_argument("--name", required=True, help="template name: [a-z][a-z0-9_]*")
    it.add_argument("--out", default=None, help="templates folder (default: the templates dir)")
    it.add_argument("--dpi", type=int, default=200, help="image resolution / PDF rendering dpi")
    it.add_argument("--title", default=None)
    it.add_argument("--force", action="store_true", help="replace an existing template")
    it.set_defaults(func=_init)

    pv = tsub.add_parser("preview", help="draw a template's boxes (on a scan, aligned)")
    pv.add_argument("name", help="template name, or the path of its YAML file")
    pv.add_argument("scan", nargs="?", default=None, help="a scan to align and read (page 1)")
    pv.add_argument("-o", "--output", default="preview.png", help="PNG to write")
    pv.add_argument("--side-by-side", action="store_true", help="scan before and after alignment")
    pv.add_argument("--fallback", choices=("auto", "never", "always"), default="never")
    pv.set_defaults(func=_preview)

    ck = tsub.add_parser("check", help="validate a template and read sample scans with it")
    ck.add_argument("name", help="template name, or the path of its YAML file")
    ck.add_argument("scans", nargs="*", metavar="SCAN")
    ck.add_argument("--fallback", choices=("auto", "never", "always"), default="never")
    ck.set_defaults(func=_check)
