from hippo.ids import entity_id
from hippo.text import normalize, split_passages


def test_normalize_keeps_letters_of_every_script():
    assert normalize("Thomas Südhof") == "thomas südhof"
    assert normalize("東京都") == "東京都"
    assert normalize("  The  BEATLES!! ") == "the beatles"
    assert normalize("Straße") == normalize("STRASSE")
    assert normalize("Ｔｏｋｙｏ") == "tokyo"  # full-width folds to ASCII


def test_distinct_non_ascii_names_stay_distinct():
    names = ["東京都", "大阪府", "Südhof", "Sudhof", "Ørnø"]
    assert len({entity_id(normalize(n)) for n in names}) == len(names)


def test_punctuation_only_name_is_empty_not_a_shared_node():
    assert normalize("!!!") == ""


def test_split_passages_keeps_short_text_whole_and_cuts_long_text_at_sentences():
    assert split_passages("One sentence.", 100) == ["One sentence."]
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    parts = split_passages(text, 200)
    assert len(parts) > 1
    assert all(len(p) <= 200 for p in parts)
    assert all(p.endswith(".") for p in parts)
    assert " ".join(parts) == text


def test_keyword_tokens_fold_case_and_diacritics_on_both_paths():
    from hippo.memory.keywords import tokens

    assert tokens("The Beatles' 1965 tour, Shea-Stadium") == ["the", "beatles", "1965", "tour", "shea", "stadium"]
    assert tokens("Thomas SÜDHOF in Göttingen") == ["thomas", "sudhof", "in", "gottingen"]
    assert tokens("Ｔｏｋｙｏ 東京都") == ["tokyo", "東京都"]


def test_an_ascii_name_is_found_as_the_pattern_finds_it():
    """The ASCII path of ``surface_form`` (no pattern compiled) spans what the pattern spans."""
    import random
    import re

    from hippo.memory.names import surface_form

    def by_pattern(key: str, text: str) -> str | None:  # the rule, as the pattern path states it
        pattern = r"(?<!\w)" + r"[\W_]+".join(map(re.escape, key.split())) + r"(?!\w)"
        found = re.search(pattern, text, re.IGNORECASE)
        return " ".join(found.group(0).split()) if found else None

    assert surface_form("shea stadium", "At SHEA--Stadium, 1965") == "SHEA--Stadium"
    assert surface_form("shea stadium", "at shea_stadium") == "shea_stadium"  # "_" parts words
    assert surface_form("shea", "at shea_stadium") is None  # but is no edge of one
    assert surface_form("lena markov", "by Lena\n  Markov.") == "Lena Markov"
    assert surface_form("thomas südhof", "Thomas Südhof won") == "Thomas Südhof"  # the pattern's path
    rng, alphabet, found = random.Random(7), "abcAB1 _-'.,\n", 0
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        key = normalize("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))))
        if key:
            assert surface_form(key, text) == by_pattern(key, text), (key, text)
            found += by_pattern(key, text) is not None
    assert found > 2_000  # the comparison covers spans found, not only misses
