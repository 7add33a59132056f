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
