"""Relation chains in compositional questions: "the X of the Y of Z".

"Where was the place of death of the director of film Emile the African?"
is a chain: it starts at a named thing (*film Emile the African*), follows a
relation to an unnamed one (its *director*), and asks about that one (his
*place of death*). The first hop, "director of film Emile the African", is
what a stored fact says ("Emile the African" directed by "Robert Vernay"):
used as a query for facts, it finds the bridge entity the question never
names. The whole question's embedding mixes both hops and finds it less often.

The parse reads the surface of the question (runs of "of" between noun
phrases) and uses spaCy's tags only to find nouns and names:
``en_core_web_sm`` often attaches a title's words oddly ("Emile" to the root),
while the words themselves stay in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_LINKS = {"of", "in", "for", "by", "from"}  # "the waterfall in the country", "the author of"
_STOP = {"which", "that", "who", "whom", "whose", "where", "when", "what", "why", "how", "and", "or", "was",
         "is", "were", "are", "did", "does", "do", "has", "have", "had"}
_DETERMINERS = {"the", "a", "an"}


@dataclass(frozen=True)
class Chain:
    """``relations`` outermost first: ["place of death", "director"]; ``anchor`` is where the chain starts."""

    anchor: str
    relations: list[str] = field(default_factory=list)

    @property
    def first_hop(self) -> str | None:
        """The innermost relation with its anchor: "director of film Emile the African"."""
        return f"{self.relations[-1]} of {self.anchor}" if self.relations else None


def _named(tokens) -> bool:
    return any(t.pos_ in {"PROPN", "NUM"} or (t.text[:1].isupper() and t.i > 0) for t in tokens)


def _noun_group(doc, end: int) -> tuple[int, str] | None:
    """The noun phrase ending just before ``end`` ("the first president"), as (start, text without
    determiners), or None when no noun ends there."""
    i = end - 1
    if i < 0 or doc[i].pos_ != "NOUN" or doc[i].text[:1].isupper():  # a relation is a common noun
        return None
    start = i
    while start > 0 and doc[start - 1].pos_ in {"NOUN", "PROPN", "ADJ", "NUM"} and doc[start - 1].lower_ not in _STOP:
        start -= 1
    words = [t.text for t in doc[start:end] if t.lower_ not in _DETERMINERS]
    return (start, " ".join(words)) if words else None


def _anchor(doc, start: int) -> str | None:
    """The phrase after a link word, up to the clause's end: "film Emile The African"."""
    end = start
    while end < len(doc) and not _ends_anchor(doc[end], start):
        end += 1
    span = doc[start:end]
    words = [t.text for t in span if t.lower_ not in _DETERMINERS or t.i > start]
    return " ".join(words) if words and _named(span) else None


def _ends_anchor(token, start: int) -> bool:
    if token.text[:1].isupper() and token.i > 0:  # inside a title every capitalized word belongs
        return False
    if token.is_punct or token.lower_ in _STOP or token.pos_ in {"VERB", "AUX"}:
        return True
    if token.i > start and token.lower_ in _DETERMINERS:  # "Brand a citizen": a new phrase begins
        return True
    return _is_link(token)


def _is_link(token) -> bool:
    return token.lower_ in _LINKS and not token.text[:1].isupper()  # "Duchess Of Blekinge" is one name


def parse_chain(doc) -> Chain | None:
    """The relation chain a parsed question ends in, or None when it names no chain.

    The anchor is the named phrase after the last link word; relations are the
    noun phrases before each link word of an unbroken "N of N of ..." run.
    """
    links = [t.i for t in doc if _is_link(t)]
    for li in reversed(links):
        anchor = _anchor(doc, li + 1)
        if anchor is None:
            continue
        relations: list[str] = []
        end = li
        while True:
            group = _noun_group(doc, end)
            if group is None:
                break
            start, text = group
            relations.insert(0, text)
            # "the place of death of the director": step over "of the" to the next noun group.
            previous = start - 1
            while previous >= 0 and doc[previous].lower_ in _DETERMINERS:
                previous -= 1
            if previous < 0 or not _is_link(doc[previous]):
                break
            end = previous
        if relations:
            return Chain(anchor=anchor, relations=_merge_of(relations))
    return None


def _merge_of(relations: list[str]) -> list[str]:
    """Relations written "place of death" are one relation, not "place" then "death"."""
    merged: list[str] = []
    for rel in relations:
        if merged and len(merged[-1].split()) == 1 and merged[-1] in _COMPOSITE_HEADS:
            merged[-1] = f"{merged[-1]} of {rel}"
        else:
            merged.append(rel)
    return merged


# Nouns that only name a relation together with their "of" phrase.
_COMPOSITE_HEADS = {"place", "date", "country", "cause", "city", "year", "time", "name", "kind", "type"}
