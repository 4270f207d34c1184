"""Showing code and tables in a chapter (all chapters)."""
from __future__ import annotations

import html
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from rnnbook.claims import format_value


def show_code(*objects: Any) -> None:
    """Show the library source of functions or classes next to the equation they implement."""
    from IPython.display import Markdown, display

    src = "\n\n".join(inspect.getsource(o).rstrip() for o in objects)
    display(Markdown(f"````python\n{src}\n````\n"))


class Table:
    """A small table of records, shown as HTML in the book and as text elsewhere."""

    def __init__(self, records: Sequence[Mapping[str, Any]]):
        self.records = list(records)
        self.columns = list(dict.fromkeys(k for r in self.records for k in r))

    def _cells(self) -> list[list[str]]:
        return [[format_value(r.get(c, "")) for c in self.columns] for r in self.records]

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in row) + "</tr>"
                       for row in self._cells())
        return f'<div class="rnnbook-table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'

    def __repr__(self) -> str:
        rows = [self.columns] + self._cells()
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.columns))]
        return "\n".join("  ".join(x.ljust(w) for x, w in zip(r, widths)) for r in rows)


def table(records: Sequence[Mapping[str, Any]]) -> Table:
    """A table of ``records`` (one dict per row) for display."""
    return Table(records)
