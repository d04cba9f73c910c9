"""How the CLI shows results: one line per input (upload, capture), the compare report and the
stats table. Each renderer takes results and prints with ``typer.echo``; nothing else."""

from __future__ import annotations

import typer

from .cli_options import cli_state

__all__ = ["render_upload", "render_bc_report", "timings_line", "render_capture", "fmt_db", "render_compare",
           "render_stats"]


def render_upload(results, session) -> None:
    for r in results:
        if r.skipped:
            typer.echo(f"{r.source}: up to date")
            continue
        if not (r.ok or r.layout):
            continue
        lay = r.layout
        copies = ("chain and file made on the host (the C engine: no upload, no capture); "
                  if r.upload_path is None and r.mips_engine == "host" else
                  f"write_texture bytes_per_row {lay['bytes_per_row']}; capture bytes_per_row "
                  f"{lay['padded_bytes_per_row']} (+{lay['padding_per_row']} padding per row), staging "
                  f"{lay['staging_bytes']} bytes; path {r.upload_path or 'none'}; ")
        typer.echo(
            f"{r.source}: {r.format} {r.width}x{r.height} ({r.color_space}), {lay['data_bytes']} bytes; "
            + copies
            + (f"resized from {r.resized_from[0]}x{r.resized_from[1]}" if r.resized_from
               else "exact round trip" if r.verified else "not verified" if r.verified is None else "MISMATCH")
            + (f"; {r.texture}" if r.texture and r.texture != "2d" else "")
            + (f"; {r.levels} levels" if r.levels and r.levels > 1 else "")
            + (f" -> {', '.join(r.outputs)}" if r.outputs else "")
            + timings_line(r)
        )
        render_bc_report(r)


def render_bc_report(r) -> None:
    """``--report``: one line per encoded level (and layer)."""
    for row in r.bc_report or []:
        typer.echo(f"  {r.format} level {row['level']}" + (f" layer {row['layer']}" if "layer" in row else "")
                   + f": PSNR {fmt_db(row['psnr'])} dB"
                   + (f", alpha {fmt_db(row['psnr_alpha'])} dB" if "psnr_alpha" in row else "")
                   + (f", SSIM {row['ssim']:.5f}" if row.get("ssim") is not None else ""))


def timings_line(r) -> str:
    """With -v: the input's stage timings."""
    if not cli_state.get("verbose") or not r.timings:
        return ""
    return "  [" + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in r.timings.items()) + "]"


def render_capture(results, session) -> None:
    for r in results:
        if r.skipped:
            typer.echo(f"{r.source}: up to date")
        elif r.ok:
            typer.echo(f"{r.source} -> {', '.join(r.outputs)}  ({r.format} {r.width}x{r.height}"
                       + (f" from {r.resized_from[0]}x{r.resized_from[1]}" if r.resized_from else "")
                       + (f", {r.levels} levels" if r.levels and r.levels > 1 else "")
                       + "".join(f"; {n}" for n in r.notes) + ")" + timings_line(r))


def fmt_db(v) -> str:
    return "inf" if v is None else f"{v:.2f}"


def render_compare(report: dict) -> None:
    names = "rgba"
    for lv in report["levels"]:
        c = lv["channels"]
        ch = names[:c] if c != 2 else "ra"
        per = lambda key, f: ", ".join(f"{ch[i]} {f(lv[key][i])}" for i in range(c))  # noqa: E731, B023
        typer.echo(f"level {lv['level']} {lv['width']}x{lv['height']} {lv['format']}: "
                   f"max diff {per('max_abs_diff', lambda v: f'{v:g}')}; "
                   f"MAE {per('mae', lambda v: f'{v:.6g}')}; MSE {per('mse', lambda v: f'{v:.6g}')}; "
                   f"PSNR {fmt_db(lv['psnr_all'])} dB ({per('psnr', fmt_db)}); "
                   f"{lv['differing_texels']} texels differ; SSIM "
                   + ("n/a (under 11x11)" if lv["ssim"] is None else f"{lv['ssim']:.6f}"))
    verdict = "identical" if all(lv["identical"] for lv in report["levels"]) else (
        "within thresholds" if report["within"] else "DIFFERENT")
    typer.echo(f"{report['a']} vs {report['b']}: {verdict} ({report['readback_bytes']} bytes read back)")


def render_stats(results, session) -> None:
    for r in results:
        if not r.ok:
            continue
        for st in r.stats:
            typer.echo(f"{r.source} level {st['level']} {st['width']}x{st['height']} {st['format']}:")
            for i in range(st["channels"]):
                typer.echo(f"  channel {i}: min {st['min'][i]:g} max {st['max'][i]:g} "
                           f"mean {st['mean'][i]:.6g} std {st['std'][i]:.6g}")
                if st["histogram"]:
                    typer.echo(f"    histogram over [{st['histogram_range'][i][0]:g}, "
                               f"{st['histogram_range'][i][1]:g}): {' '.join(map(str, st['histogram'][i]))}")
