import json
import math
import os
import subprocess
import sys

import pytest

from hippo.errors import InvalidInput
from hippo.extract import OpenIEImport, SpacyExtractor
from hippo.models import Passage


@pytest.fixture(scope="module")
def spacy_extractor() -> SpacyExtractor:
    return SpacyExtractor()


def _triples(extractor: SpacyExtractor, text: str, title: str = "") -> set[tuple[str, str, str]]:
    [extraction] = extractor.extract([Passage(id="p", doc_id="d", title=title, text=text)])
    return {(t.subject, t.predicate, t.object) for t in extraction.triples}


def test_subject_verb_object_and_prepositional_objects(spacy_extractor):
    triples = _triples(spacy_extractor, "Marie Curie discovered polonium in Paris.")
    assert ("Marie Curie", "discover", "polonium") in triples
    assert ("Marie Curie", "discover in", "Paris") in triples


def test_passive_verbs_keep_their_surface_form(spacy_extractor):
    assert ("Thomas Südhof", "born in", "Göttingen") in _triples(
        spacy_extractor, "Thomas Südhof was born in Göttingen.")


def test_copula_and_of_phrase(spacy_extractor):
    triples = _triples(spacy_extractor, "Tokyo is the capital of Japan.")
    assert ("Tokyo", "capital of", "Japan") in triples


def test_apposition(spacy_extractor):
    triples = _triples(spacy_extractor, "Ada Lovelace, the daughter of Lord Byron, wrote notes.")
    assert ("Ada Lovelace", "daughter of", "Lord Byron") in triples


def test_pronoun_subject_is_read_as_the_title(spacy_extractor):
    triples = _triples(spacy_extractor, "He founded the Veskari Shipping Company.", title="Nils Hvarnø")
    assert ("Nils Hvarnø", "found", "Veskari Shipping Company") in triples


def test_title_and_named_entities_are_entities(spacy_extractor):
    [extraction] = spacy_extractor.extract(
        [Passage(id="p", doc_id="d", title="Göttingen", text="Göttingen lies in Lower Saxony, Germany.")])
    names = {e.name for e in extraction.entities}
    assert {"Göttingen", "Lower Saxony", "Germany"} <= names


def test_query_phrases_drop_question_words(spacy_extractor):
    phrases = spacy_extractor.query_phrases("Who founded the company that built the Stanford Tower?")
    assert "Stanford Tower" in phrases
    assert not any(p.lower().startswith(("who", "the ")) for p in phrases)


def _write(tmp_path, data, raw: str | None = None):
    path = tmp_path / "openie.json"
    path.write_text(raw if raw is not None else json.dumps(data), encoding="utf-8")
    return path


def test_openie_v2_file_with_nan_and_malformed_triples(tmp_path):
    raw = ('{"docs": [{"idx": "chunk-1", "passage": "Alpha\\nAlpha was built by Beta.", '
           '"extracted_entities": ["Alpha", "Beta", NaN], '
           '"extracted_triples": [["Alpha", "built by", "Beta"], ["broken"], ["x", NaN, "y"]]}], '
           '"avg_ent_chars": NaN}')
    importer = OpenIEImport.from_file(_write(tmp_path, None, raw))
    [extraction] = importer.extract([Passage(id="p", doc_id="d", title="Alpha", text="Alpha was built by Beta.")])
    assert [(t.subject, t.predicate, t.object) for t in extraction.triples] == [("Alpha", "built by", "Beta")]
    assert {e.name for e in extraction.entities} == {"Alpha", "Beta"}


def test_openie_v1_file_with_repr_passage_and_spacy_fallback(tmp_path, spacy_extractor):
    data = {"docs": [{"title": "Alpha", "text": "Alpha is red.", "passage": repr("Alpha\nAlpha is red."),
                      "extracted_entities": ["Alpha"], "extracted_triples": [["Alpha", "is", "red"]]}],
            "avg_ent_chars": math.nan}
    importer = OpenIEImport.from_file(_write(tmp_path, data), fallback=spacy_extractor)
    known, unknown = importer.extract([
        Passage(id="p1", doc_id="d", title="Alpha", text="Alpha is red."),
        Passage(id="p2", doc_id="d", title="", text="Marie Curie discovered polonium."),
    ])
    assert known.triples[0].object == "red"
    assert unknown.triples, "a passage missing from the file falls back to spaCy"
    assert importer.missed == 1


def test_openie_file_errors_name_the_field(tmp_path):
    with pytest.raises(InvalidInput, match="openie_file"):
        OpenIEImport.from_file(_write(tmp_path, None, "{not json"))
    with pytest.raises(InvalidInput, match="no 'docs' list"):
        OpenIEImport.from_file(_write(tmp_path, {"something": 1}))


_PROCESS = """
import json, sys
from hippo.extract.spacy import load_pipeline
doc = load_pipeline()("Lena Markov designed the Aurora Bridge.")
peak = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0]  # not ru_maxrss: it
seen = {"torch_after_spacy": "torch" in sys.modules, "ents": [e.text for e in doc.ents],  # counts the parent
        "rss_mb": int(peak.split()[1]) / 1024}
from hippo.embed import SentenceEmbedder
vector = SentenceEmbedder("sentence-transformers/all-MiniLM-L6-v2").encode(["Aurora Bridge"])[0]
seen["torch_vector_norm"] = float((vector ** 2).sum() ** 0.5)
print(json.dumps(seen))
"""


def test_parsing_does_not_load_torch_and_the_torch_backend_still_works_after():
    """thinc imports torch when it can (461 MB of RSS); spaCy's small model needs none of it."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _PROCESS], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["torch_after_spacy"] is False and "Lena Markov" in seen["ents"]
    assert seen["rss_mb"] < 450  # 240 here; 701 with torch loaded by thinc
    assert abs(seen["torch_vector_norm"] - 1.0) < 1e-4  # torch, imported after, encodes as before
