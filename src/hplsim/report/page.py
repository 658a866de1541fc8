"""One self-contained HTML page: sections of figures, each with a one-line caption and the
numbers behind it in a table.

The figures are Plotly figures. Plotly's JavaScript (the minified bundle shipped inside
the `plotly` Python package, ~4.8 MB) is inlined once, so the page needs no server and no
network and opens the same in ten years; each figure's data is embedded as JSON (numeric
arrays as base64 typed arrays). The page marks each figure `data-rendered` once drawn and
records the drawing time in `body[data-render-ms]` (and the time since the page was
opened in `data-load-ms`), which the tests and the Gantt
benchmark read from a headless browser.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from hplsim import __version__

MAX_TABLE_ROWS = 200  # a table longer than this shows its first rows and says so

_STYLE = """
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
nav a{margin-right:1em}.figure{margin:1.5em 0}.caption{font-style:italic;margin:.3em 0}
.plot{width:100%;height:480px}.plot.tall{height:720px}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
th{background:#f4f4f4}details{margin:.3em 0}.note{color:#555;font-size:.9em}
"""

# Draws every figure once the page is parsed; failures go to the console (the tests read it).
_SCRIPT = """
(function(){
  var t0 = performance.now();
  var divs = document.querySelectorAll('div.plot[data-figure]');
  var jobs = [];
  divs.forEach(function(div){
    var fig = JSON.parse(document.getElementById(div.dataset.figure).textContent);
    var config = {responsive: true, displaylogo: false};
    jobs.push(Plotly.newPlot(div, fig.data, fig.layout, config).then(function(){
      div.setAttribute('data-rendered', '1');
    }));
  });
  Promise.all(jobs).then(function(){
    document.body.setAttribute('data-render-ms', (performance.now() - t0).toFixed(1));
    document.body.setAttribute('data-load-ms', performance.now().toFixed(1));
  }).catch(function(err){ console.error('hplsim report: a figure failed to render: ' + err); });
})();
"""


@dataclass
class Figure:
    """A Plotly figure, its one-line caption, and the table of the numbers it shows."""

    key: str
    caption: str
    figure: object  # plotly.graph_objects.Figure
    table: pd.DataFrame
    tall: bool = False
    note: str = ""


@dataclass
class Section:
    key: str
    title: str
    intro: str = ""
    figures: list[Figure] = field(default_factory=list)


def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _table_html(df: pd.DataFrame) -> str:
    shown = df.head(MAX_TABLE_ROWS)
    text = shown.to_html(index=False, border=0, float_format=lambda v: f"{v:.6g}", na_rep="")
    if len(df) > len(shown):
        text += f'<p class="note">first {len(shown)} of {len(df)} rows</p>'
    return text


def _figure_html(sec: Section, fig: Figure) -> str:
    import plotly.io as pio

    fid = f"{sec.key}-{fig.key}"
    data_json = pio.to_json(fig.figure, validate=False).replace("</", "<\\/")
    note = f'<p class="note">{html.escape(fig.note)}</p>' if fig.note else ""
    return (
        f'<div class="figure" id="{fid}" data-section="{sec.key}">\n'
        f'<p class="caption">{html.escape(fig.caption)}</p>{note}\n'
        f'<div class="plot{" tall" if fig.tall else ""}" data-figure="{fid}-json"></div>\n'
        f'<script type="application/json" id="{fid}-json">{data_json}</script>\n'
        f'<details><summary>numbers behind this figure</summary>{_table_html(fig.table)}</details>\n'
        "</div>"
    )


def render(title: str, sections: list[Section], inputs: list[str]) -> str:
    nav = " ".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>' for s in sections)
    body = []
    for sec in sections:
        body.append(f'<section id="{sec.key}"><h2>{html.escape(sec.title)}</h2>')
        if sec.intro:
            body.append(f"<p>{html.escape(sec.intro)}</p>")
        body.extend(_figure_html(sec, f) for f in sec.figures)
        body.append("</section>")
    sources = ", ".join(html.escape(i) for i in inputs)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
        f"<script>{plotly_js()}</script></head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1><p class=\"note\">hplsim {__version__}; from {sources}</p>"
        f"<nav>{nav}</nav>\n" + "\n".join(body) + f"\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def write_page(path: Path, text: str) -> None:
    """Write atomically, by the project's one writer rule (hplsim.outputs)."""
    from hplsim.outputs import write_text

    write_text(path, text, "the report (-o)")
