"""Writes the SVG figures of the guides (run from the repository root:
``python docs/assets/figures.py``). Plain SVG, no fonts or scripts to fetch.

Each view figure draws a flat buffer as a row of cells and a 2-D view as a
grid below it; a cell of the view shows the buffer index it reads
(``offset + i * strides[0] + j * strides[1]``) in that buffer cell's colour.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
CELL = 34
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


def colour(k: int, n: int) -> str:
    return f"hsl({int(360 * k / max(n, 1))}, 65%, 78%)"


def cell(x: float, y: float, label: str, fill: str, bold: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{fill}" '
            f'stroke="#444"/><text x="{x + CELL / 2}" y="{y + CELL / 2 + 5}" '
            f'text-anchor="middle" font-size="13" {FONT}{weight}>{label}</text>')


def text(x: float, y: float, s: str, size: int = 14, anchor: str = "start") -> str:
    return (f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" {FONT}>'
            f'{s}</text>')


def view_figure(name: str, title: str, size: int, shape: tuple[int, int],
                strides: tuple[int, int], offset: int, note: str = "") -> None:
    rows, cols = shape
    used = {offset + i * strides[0] + j * strides[1] for i in range(rows) for j in range(cols)}
    width = max(60 + size * CELL, 260 + cols * CELL) + 20
    height = 150 + rows * CELL + (24 if note else 0)
    parts = [text(10, 22, title, 15), text(10, 52, "buffer", 12)]
    for k in range(size):
        parts.append(cell(60 + k * CELL, 34, str(k), colour(k, size) if k in used else "#eee"))
    y0 = 100
    parts.append(text(10, y0 + 16, f"view  shape ({rows}, {cols})", 13))
    parts.append(text(10, y0 + 36, f"strides ({strides[0]}, {strides[1]})", 13))
    parts.append(text(10, y0 + 56, f"offset {offset}", 13))
    for i in range(rows):
        for j in range(cols):
            k = offset + i * strides[0] + j * strides[1]
            parts.append(cell(230 + j * CELL, y0 + i * CELL, str(k), colour(k, size)))
    if note:
        parts.append(text(10, y0 + rows * CELL + 30, note, 12))
    write(name, width, height, parts)


def write(name: str, width: float, height: float, parts: list[str]) -> None:
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">\n<rect width="100%" height="100%" fill="white"/>\n'
           + "\n".join(parts) + "\n</svg>\n")
    (HERE / name).write_text(svg, encoding="utf-8")


def box(x: float, y: float, w: float, label: str, sub: str, fill: str) -> str:
    return (f'<rect x="{x}" y="{y}" width="{w}" height="46" rx="8" fill="{fill}" '
            f'stroke="#333"/>' + text(x + w / 2, y + 20, label, 14, "middle")
            + text(x + w / 2, y + 38, sub, 11, "middle"))


def arrow(x1: float, y1: float, x2: float, y2: float, dashed: bool = False,
          label: str = "", colour_: str = "#333") -> str:
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    marker = "back" if dashed else "fwd"
    out = (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour_}" '
           f'stroke-width="1.6"{dash} marker-end="url(#{marker})"/>')
    if label:
        out += (f'<text x="{(x1 + x2) / 2 + 6}" y="{(y1 + y2) / 2 - 4}" font-size="11" '
                f'fill="{colour_}" {FONT}>{label}</text>')
    return out


def autodiff_figure() -> None:
    defs = ('<defs><marker id="fwd" markerWidth="9" markerHeight="9" refX="8" refY="4.5" '
            'orient="auto"><path d="M0,0 L9,4.5 L0,9 z" fill="#333"/></marker>'
            '<marker id="back" markerWidth="9" markerHeight="9" refX="8" refY="4.5" '
            'orient="auto"><path d="M0,0 L9,4.5 L0,9 z" fill="#c0392b"/></marker></defs>')
    red = "#c0392b"
    parts = [defs, text(10, 22, "forward (solid): a, b → c = a * b → d = c + a → L = d.sum()", 13),
             text(10, 42, "backward (dashed): each node sends grad × local derivative to "
                  "its inputs; a gets two contributions, which add", 13, "start")]
    leaf, node = "#d6eaf8", "#fdebd0"
    parts += [box(20, 80, 150, "a (leaf)", "[2, 3]  grad [5, 6]", leaf),
              box(20, 200, 150, "b (leaf)", "[4, 5]  grad [2, 3]", leaf),
              box(250, 140, 140, "MulBackward", "c = [8, 15]", node),
              box(470, 110, 140, "AddBackward", "d = [10, 18]", node),
              box(690, 110, 130, "SumBackward", "L = 28", node)]
    parts += [arrow(170, 103, 250, 155), arrow(170, 223, 250, 172),
              arrow(390, 160, 470, 140), arrow(170, 95, 470, 120),
              arrow(610, 133, 690, 133)]
    parts += [arrow(690, 150, 610, 150, True, "1", red),
              arrow(470, 158, 390, 175, True, "[1, 1]", red),
              arrow(470, 112, 170, 84, True, "[1, 1]", red),
              arrow(250, 185, 170, 240, True, "a·g = [2, 3]", red),
              arrow(250, 140, 170, 112, True, "b·g = [4, 5]", red)]
    parts.append(text(20, 285, "a.grad = [4, 5] + [1, 1] = [5, 6]    b.grad = [2, 3]", 13))
    write("autodiff-graph.svg", 850, 300, parts)


def main() -> None:
    view_figure("view-compact.svg", "a = arange(12).reshape(3, 4): a compact view", 12,
                (3, 4), (4, 1), 0)
    view_figure("view-transpose.svg", "a.T: swap shape and strides, same buffer", 12,
                (4, 3), (1, 4), 0, "not compact: element i of the view is not buffer[i]")
    view_figure("view-slice.svg", "a[1:, ::2]: offset moves to row 1, column stride doubles",
                12, (2, 2), (4, 2), 4, "grey cells are in the buffer but not in the view")
    view_figure("view-broadcast.svg", "arange(4).broadcast_to((3, 4)): stride 0 repeats a row",
                4, (3, 4), (0, 1), 0)
    view_figure("view-flip.svg", "a.flip(1): negative stride, offset at the last column",
                12, (3, 4), (4, -1), 3)
    view_figure("view-reshape.svg", "a.reshape(2, 6): new strides over the same buffer",
                12, (2, 6), (6, 1), 0)
    autodiff_figure()


if __name__ == "__main__":
    main()
