"""How large a reader's view is as text: the size a built memory reports (``memory/build``'s ``tokens``).

A view's text form is its facts (those of live passages in the reader's spaces), one line each
("subject predicate object"), and the distinct entities those passages mention, by name; each
counted with ``hippo.text.approx_tokens``. A Neo4j store sums it in the server, whatever the read
mode (no derived state needed); over SQLite it is read off the projection and the store. Either
way ``Memory.text_form`` keeps it per set of spaces and store revision (``hippo.memory.kept``): a
second build over an unchanged store costs one revision read.
"""

from __future__ import annotations

from hippo.memory.core import Engine
from hippo.memory.walk import view_records
from hippo.models import TextForm
from hippo.store import Store
from hippo.store.base import Spaces
from hippo.text import approx_tokens


def count_text_form(engine: Engine, store: Store, spaces: Spaces) -> TextForm:
    """Summed by the store where it can (Neo4j: ``read_text_form.cypher``, three numbers over the
    wire), else from the view's records off the projection and their names and lines from the store."""
    counted = getattr(store, "text_form", None)
    if counted is not None:
        return counted(spaces)
    records = view_records(engine, spaces)
    names = [e.name for e in store.entities(records.entity_ids)]
    lines = [f.text for f in store.facts(records.fact_ids)]
    return TextForm(tokens=sum(map(approx_tokens, names)) + sum(map(approx_tokens, lines)),
                    entities=len(names), facts=len(lines))
