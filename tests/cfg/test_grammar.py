"""Tests of fastdcyk.cfg.grammar: reading, errors, CNF checks and conversion, builtins."""

from __future__ import annotations

import io
import itertools
import os
import pickle
import warnings

import nltk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdcyk.cfg.cyk import recognizes
from fastdcyk.cfg.grammar import Grammar, GrammarError, GrammarWarning, Rule, Symbol

EXAMPLE = "S -> D E | D S\nD -> 'a'\nE -> 'b'\n"


def language(rules: list[tuple[str, tuple[tuple[str, bool], ...]]], max_len: int) -> dict:
    """Brute force: every string of length <= max_len each nonterminal derives (epsilon too).

    Iterates the rules to a fixpoint over sets of strings, independently of any parser.
    """
    lang: dict[str, set[tuple[str, ...]]] = {lhs: set() for lhs, _ in rules}
    for _, rhs in rules:
        for name, terminal in rhs:
            if not terminal:
                lang.setdefault(name, set())
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            partial = {()}
            for name, terminal in rhs:
                options = {(name,)} if terminal else lang[name]
                partial = {p + o for p in partial for o in options if len(p) + len(o) <= max_len}
            if not partial <= lang[lhs]:
                lang[lhs] |= partial
                changed = True
    return lang


def rules_of(grammar: Grammar) -> list:
    return [(r.lhs, tuple((s.name, s.terminal) for s in r.rhs)) for r in grammar.rules]


# --------------------------------------------------------------------------- reading


def test_example_attributes():
    g = Grammar.from_string(EXAMPLE)
    assert g.start == "S"
    assert g.nonterminals == ("S", "D", "E")
    assert g.terminals == ("a", "b")
    assert g.unary_rules == (("D", "a"), ("E", "b"))
    assert g.binary_rules == (("S", "D", "E"), ("S", "D", "S"))
    assert len(g) == 4
    assert g.is_cnf
    assert g.rules[0] == Rule("S", (Symbol("D", False), Symbol("E", False)))
    assert str(g.rules[2]) == "D -> 'a'"


def test_order_of_first_appearance_counts_right_sides():
    g = Grammar.from_string("S -> B A\nA -> 'y'\nB -> 'x'\nA -> A B")
    assert g.nonterminals == ("S", "B", "A")
    assert g.terminals == ("y", "x")


def test_comments_blank_lines_double_quotes_and_duplicates():
    text = """
    # a comment line

    S -> A B   # trailing comment
    A -> "a" | 'a'     # the same terminal twice: one rule
    B -> 'b#not a comment' | "it's"
    S -> A B
    """
    g = Grammar.from_string(text)
    assert len(g) == 4
    assert g.terminals == ("a", "b#not a comment", "it's")
    assert g.rules == tuple(dict.fromkeys(g.rules))


def test_terminal_and_nonterminal_namespaces_are_separate():
    g = Grammar.from_string("S -> S T | 'S'\nT -> 'T'")
    assert g.nonterminals == ("S", "T")
    assert g.terminals == ("S", "T")
    assert g.unary_rules == (("S", "S"), ("T", "T"))
    assert recognizes(g, ["S", "T"])
    assert not recognizes(g, ["T", "S"])


def test_lookup_structures():
    g = Grammar.from_string("S -> A B | B A\nA -> 'x' | A A\nB -> 'x' | 'y'")
    assert g.lexicon["x"] == {"A", "B"}
    assert g.lexicon["y"] == {"B"}
    assert g.binary_index[("A", "B")] == {"S"}
    assert g.binary_index[("A", "A")] == {"A"}
    assert g.unary_by_lhs == {"S": (), "A": ("x",), "B": ("x", "y")}
    assert g.binary_by_lhs["S"] == (("A", "B"), ("B", "A"))
    assert dict(g.nonterminal_index) == {"S": 0, "A": 1, "B": 2}
    assert g.lexical_mask("x") == 0b110
    assert g.lexical_mask("zzz") == 0
    assert g.combine_masks(0b010, 0b100) == 0b001
    assert g.combine_masks(0b110, 0b110) == 0b011
    assert g.nonterminals_of_mask(0b101) == {"S", "B"}


def test_start_directive_and_nltk_round_trip():
    g = Grammar.from_string("%start B\nA -> B B\nB -> 'b' # x")
    assert g.start == "B"
    assert g.nonterminals[0] == "B"
    assert Grammar.from_string(g.to_string()) == g
    assert Grammar.from_nltk(g.to_nltk()) == g


def test_equality_hash_repr_str_immutability_pickle():
    g = Grammar.from_string(EXAMPLE)
    h = Grammar.from_string("S -> D E\nS -> D S\nD -> 'a'\nE -> 'b'")
    assert g == h and hash(g) == hash(h)
    assert g != Grammar.from_string("S -> D S | D E\nD -> 'a'\nE -> 'b'")
    assert g != "not a grammar"
    assert repr(g) == (
        "<Grammar start='S': 4 rules (2 unary, 2 binary, CNF), 3 nonterminals, 2 terminals>"
    )
    assert str(g) == g.to_string() == EXAMPLE.strip()
    with pytest.raises(AttributeError):
        g.start = "D"
    with pytest.raises(AttributeError):
        del g.rules
    assert pickle.loads(pickle.dumps(g)) == g
    assert {g: 1}[h] == 1


def test_the_terminal_set_is_the_terminals_in_every_form():
    text = "S -> NP VP\nNP -> 'she' | 'caf\u0065\u0301'\nVP -> 'runs' NP"
    g = Grammar.from_string(text, cnf="allow")
    for form in (g, g.to_cnf(), pickle.loads(pickle.dumps(g.to_cnf()))):
        assert form.terminal_set == frozenset(form.terminals)
        assert "caf\u00e9" in form.terminal_set  # kept in NFC, as the terminals
    with pytest.raises(AttributeError):
        g.terminal_set = frozenset()


_names = st.sampled_from(["S", "A", "B_2", "NP/x", "a-b", "Z^1"])
_words = st.text(alphabet=st.sampled_from(list("ab'\"\\# |->%x")), min_size=1, max_size=5)


@pytest.mark.filterwarnings("ignore::fastdcyk.cfg.grammar.GrammarWarning")  # random grammars
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            _names,
            st.lists(
                st.one_of(_names.map(lambda n: (n, False)), _words.map(lambda w: (w, True))),
                max_size=4,
            ),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_to_string_round_trips(raw):
    g = Grammar([Rule(lhs, tuple(Symbol(*s) for s in rhs)) for lhs, rhs in raw], cnf="allow")
    again = Grammar.from_string(g.to_string(), cnf="allow")
    assert again == g
    assert again.nonterminals == g.nonterminals and again.terminals == g.terminals


def test_from_nltk():
    cfg = nltk.CFG.fromstring("S -> NP VP\nNP -> 'n' | NP PP\nVP -> 'v'\nPP -> P NP\nP -> 'p'")
    g = Grammar.from_nltk(cfg)
    assert g.start == "S"
    assert len(g) == len(cfg.productions())
    assert g.binary_rules == (("S", "NP", "VP"), ("NP", "NP", "PP"), ("PP", "P", "NP"))
    with pytest.raises(GrammarError, match="unit rule"):
        Grammar.from_nltk(nltk.CFG.fromstring("S -> A\nA -> 'a'"))
    assert Grammar.from_nltk(nltk.CFG.fromstring("S -> A\nA -> 'a'"), cnf="convert").rules == (
        Rule("S", (Symbol("a", True),)),
    )
    with pytest.raises(TypeError, match="nltk.CFG"):
        Grammar.from_nltk("S -> 'a'")


def test_from_nltk_keeps_a_start_that_is_not_first():
    cfg = nltk.CFG.fromstring("%start B\nA -> B B\nB -> 'b'")
    g = Grammar.from_nltk(cfg)
    assert g.start == "B"
    assert recognizes(g, "b") and not recognizes(g, "b b")


def test_from_file(tmp_path):
    path = tmp_path / "g.cfg"
    path.write_text(EXAMPLE, encoding="utf-8")
    assert Grammar.from_file(path) == Grammar.from_string(EXAMPLE)
    path.write_text("S -> D E\nD -> 'a' 'b'\n", encoding="utf-8")
    with pytest.raises(GrammarError) as info:
        Grammar.from_file(path)
    assert str(path) in str(info.value)
    assert info.value.line == 2 and info.value.source == str(path)


# --------------------------------------------------------------------------- errors

MALFORMED = [
    # (text, line, column, words in the message)
    ("S -> D E\nD 'a'", 2, 3, "expected '->'"),
    ("S -> D E\nD", 2, 2, "end of the line"),
    ("S -> D E\n  D -> 'a\nE -> 'b'", 2, 8, "unterminated"),
    ('S -> "a', 1, 6, "unterminated"),
    ("S -> D\n-> 'a'", 2, 1, "left side of the rule is empty"),
    ("S -> D E\n'a' -> D", 2, 1, "terminal ('a') cannot be on the left"),
    ("S -> D ; E", 1, 8, "unexpected character ';'"),
    ("S -> D E\nD -> 'a' $", 2, 10, "unexpected character '$'"),
    ("S -> D -> E", 1, 8, "second '->'"),
    ("S -> ''", 1, 6, "empty terminal"),
    ("| S -> 'a'", 1, 1, "must start with a nonterminal"),
    ("%begin S\nS -> 'a'", 1, 1, "unknown directive"),
    ("%start\nS -> 'a'", 1, 1, "exactly one nonterminal"),
    ("%start A\n%start B\nA -> 'a'", 2, 1, "second %start"),
]


@pytest.mark.parametrize(("text", "line", "column", "words"), MALFORMED)
def test_malformed_text(text, line, column, words):
    with pytest.raises(GrammarError) as info:
        Grammar.from_string(text, cnf="allow")
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.line, err.column) == (line, column)
    assert words in str(err)
    assert f"line {line}, column {column}" in str(err)


def test_start_directive_naming_no_rule():
    with pytest.raises(GrammarError, match="appears in no rule") as info:
        Grammar.from_string("S -> 'a'\n%start X")
    assert info.value.line == 2


@pytest.mark.parametrize("text", ["", "\n  # only a comment\n\n"])
def test_no_rules(text):
    with pytest.raises(GrammarError, match="no rules"):
        Grammar.from_string(text)


NOT_CNF = [
    # (text, line, column, reason)
    ("S -> A B\nA -> B\nB -> 'b'", 2, 6, "unit rule"),
    ("S -> A B C\nA -> 'a'\nB -> 'b'\nC -> 'c'", 1, 6, "3 nonterminals"),
    ("S -> A B\nA -> 'a' B\nB -> 'b'", 2, 6, "mixes terminals and nonterminals"),
    ("S -> A B\nA -> 'a' | B 'a'\nB -> 'b'", 2, 12, "mixes terminals and nonterminals"),
    ("S -> A B\nA -> 'a'\nB -> 'b' 'b'", 3, 6, "2 terminals"),
    ("S -> A B\nA -> 'a' |\nB -> 'b'", 2, 10, "epsilon"),
    ("S -> A B\nA ->\nB -> 'b'", 2, 3, "epsilon"),
]


@pytest.mark.parametrize(("text", "line", "column", "reason"), NOT_CNF)
def test_strict_cnf_errors(text, line, column, reason):
    with pytest.raises(GrammarError) as info:
        Grammar.from_string(text)
    err = info.value
    assert (err.line, err.column) == (line, column)
    assert reason in str(err)
    assert "Chomsky normal form" in str(err)
    assert "cnf='convert'" in str(err) and "to_cnf()" not in str(err)  # one spelling
    general = Grammar.from_string(text, cnf="allow")
    assert not general.is_cnf
    assert Grammar.from_string(text, cnf="convert").is_cnf


def test_constructor_errors():
    with pytest.raises(GrammarError, match="unit rule"):
        Grammar([Rule("S", (Symbol("A", False),)), Rule("A", (Symbol("a", True),))])
    with pytest.raises(GrammarError, match="not a valid nonterminal name"):
        Grammar([Rule("S X", (Symbol("a", True),))])
    with pytest.raises(GrammarError, match="not a valid terminal"):
        Grammar([Rule("S", (Symbol("", True),))])
    with pytest.raises(GrammarError, match="no rules") as info:
        Grammar([])
    assert info.value.line is None and info.value.column is None
    with pytest.raises(ValueError, match="cnf must be one of"):
        Grammar.from_string(EXAMPLE, cnf="loose")


# --------------------------------------------------------------------------- to_cnf


def assert_same_language(original: Grammar, max_len: int = 5) -> None:
    """to_cnf(original) accepts exactly original's non-empty strings up to max_len."""
    lang = language(rules_of(original), max_len)[original.start]
    alphabet = original.terminals or ("a",)
    try:
        cnf = original.to_cnf()
    except GrammarError:
        assert not any(lang), "to_cnf gave up on a grammar that derives a non-empty string"
        return
    assert cnf.is_cnf and cnf.start == original.start
    assert not set(original.nonterminals) & set(cnf.nonterminals) - set(original.nonterminals)
    for length in range(1, max_len + 1):
        for words in itertools.product(alphabet, repeat=length):
            assert recognizes(cnf, words) == (words in lang), words


def nltk_recognizes(grammar: Grammar, words) -> bool:
    """Recognition by NLTK's bottom-up chart parser (its chart, not its trees: with unit
    cycles the trees are infinitely many and NLTK lists none)."""
    cfg = grammar.to_nltk()
    chart = nltk.parse.chart.BottomUpChartParser(cfg).chart_parse(list(words))
    return any(
        True for _ in chart.select(start=0, end=len(words), is_complete=True, lhs=cfg.start())
    )


CONVERT_CASES = {
    "epsilon": "S -> A S B | \nA -> 'a' | \nB -> 'b'",
    "unit cycle": "S -> A | S S\nA -> B | 'a'\nB -> A | 'b' B",
    "long rules": "S -> A B A B | 'a' 'b' 'a' | B B B B B\nA -> 'a'\nB -> 'b'",
    "balanced": "S -> 'a' S 'b' S | ",
    "everything": "S -> X Y | 'a' X 'b' Y\nX -> Y | | 'a' X\nY -> X | 'b' | S\nZ -> Z 'a'",
}


@pytest.mark.parametrize("name", sorted(CONVERT_CASES))
def test_to_cnf_preserves_the_language(name):
    g = Grammar.from_string(CONVERT_CASES[name], cnf="allow")
    assert_same_language(g)
    cnf = g.to_cnf()
    for length in range(1, 5):
        for words in itertools.product(g.terminals, repeat=length):
            assert recognizes(cnf, words) == nltk_recognizes(g, words), words


def test_to_cnf_fresh_names_do_not_collide():
    text = "S -> 'a' S_1 T_a 'b'\nS_1 -> T_a | 'c'\nT_a -> 'a' | T_b\nT_b -> 'b'"
    g = Grammar.from_string(text, cnf="allow")
    cnf = g.to_cnf()
    # The old names keep their rules; the new ones are numbered past them.
    assert set(cnf.nonterminals) == {"S", "S_1", "S_2", "S_3", "T_a", "T_a_1", "T_b_1"}
    assert cnf.unary_by_lhs["T_a"] == ("a", "b")
    assert cnf.unary_by_lhs["T_a_1"] == ("a",)
    assert_same_language(g, max_len=6)


def test_to_cnf_of_cnf_grammar_is_itself_and_empty_language_fails():
    g = Grammar.builtin("G0")
    assert g.to_cnf() is g
    with pytest.raises(GrammarError, match="no non-empty string"):
        Grammar.from_string("S -> A A | \nA -> ", cnf="allow").to_cnf()
    with pytest.raises(GrammarError, match="no non-empty string"):
        Grammar.from_string("S -> S 'a'", cnf="allow").to_cnf()


def test_to_cnf_terminal_that_is_no_valid_name():
    g = Grammar.from_string("S -> 'a b' 'c' | 'c'", cnf="allow")
    cnf = g.to_cnf()
    assert recognizes(cnf, ["a b", "c"]) and recognizes(cnf, ["c"])
    assert not recognizes(cnf, ["c", "c"])


_gen_names = st.sampled_from(["S", "A", "B"])
_gen_rhs = st.lists(
    st.one_of(
        _gen_names.map(lambda n: (n, False)), st.sampled_from(["a", "b"]).map(lambda w: (w, True))
    ),
    max_size=4,
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_gen_names, _gen_rhs), min_size=1, max_size=7))
def test_to_cnf_on_random_grammars(raw):
    g = Grammar([Rule(lhs, tuple(Symbol(*s) for s in rhs)) for lhs, rhs in raw], cnf="allow")
    assert_same_language(g, max_len=5)


# --------------------------------------------------------------------------- builtins


def test_builtins_and_load(tmp_path):
    names = Grammar.builtin_names()
    assert names == ("G0", "G1", "G2", "G3", "G4", "example")
    for name in names:
        g = Grammar.builtin(name)
        assert g.is_cnf
        assert Grammar.load(name) == g
    assert Grammar.builtin("g2") == Grammar.builtin("G2")
    assert Grammar.builtin("example") == Grammar.from_string(EXAMPLE)
    with pytest.raises(GrammarError, match="available: G0, G1, G2, G3, G4, example"):
        Grammar.builtin("G9")
    path = tmp_path / "mine.cfg"
    path.write_text("S -> A A\nA -> 'x'", encoding="utf-8")
    assert Grammar.load(path) == Grammar.load(str(path)) == Grammar.from_file(path)
    with pytest.raises(GrammarError, match="neither a builtin grammar"):
        Grammar.load(tmp_path / "missing.cfg")


def test_from_file_that_is_not_utf8_is_a_grammar_error(tmp_path):
    path = tmp_path / "latin1.cfg"
    path.write_bytes("S -> 'caf\u00e9'\n".encode("latin-1"))
    with pytest.raises(GrammarError, match="not UTF-8 text"):
        Grammar.from_file(path)


# --------------------------------------------------------------------------- bytes, files, Unicode

CAFE = "caf\u00e9"  # NFC: one code point for the accented letter
CAFE_NFD = "cafe\u0301"  # NFD: the letter and a combining accent
LATIN1 = f"S -> D E\nD -> '{CAFE}'\nE -> 'noir'\n".encode("latin-1")


def test_from_string_reads_bytes():
    text = EXAMPLE.encode("utf-8")
    assert Grammar.from_string(text) == Grammar.from_string(EXAMPLE)
    assert Grammar.from_string(bytearray(text)) == Grammar.from_string(EXAMPLE)
    assert Grammar.from_string(LATIN1, encoding="latin-1").terminals == (CAFE, "noir")
    with pytest.raises(GrammarError, match=r"not UTF-8 text \(byte 18 is 0xe9\).*latin-1") as err:
        Grammar.from_string(LATIN1, source="cafe.cfg")
    assert err.value.source == "cafe.cfg"
    with pytest.raises(TypeError, match="must be a str .*got int"):
        Grammar.from_string(42)
    with pytest.raises(LookupError):
        Grammar.from_string(LATIN1, encoding="no-such-encoding")


def test_from_file_encoding(tmp_path):
    path = tmp_path / "latin1.cfg"
    path.write_bytes(LATIN1)
    with pytest.raises(GrammarError, match="latin1.cfg: not UTF-8 text .*encoding='latin-1'"):
        Grammar.from_file(path)
    g = Grammar.from_file(path, encoding="latin-1")
    assert g.terminals == (CAFE, "noir")
    assert Grammar.load(path, encoding="latin-1") == Grammar.load(str(path), encoding="latin-1")
    assert Grammar.load(path, encoding="latin-1") == g
    with pytest.raises(GrammarError, match="not UTF-8 text"):
        Grammar.load(path)
    with pytest.raises(LookupError):
        Grammar.from_file(path, encoding="no-such-encoding")


def test_from_file_leaves_a_descriptor_or_file_object_open(tmp_path):
    path = tmp_path / "g.cfg"
    path.write_bytes(LATIN1)
    expected = Grammar.from_file(path, encoding="latin-1")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert Grammar.from_file(fd, encoding="latin-1") == expected
        os.fstat(fd)  # raises OSError if from_file closed it
        os.lseek(fd, 0, os.SEEK_SET)
        with pytest.raises(GrammarError, match=r"<file descriptor \d+>: not UTF-8 text"):
            Grammar.from_file(fd)
        os.fstat(fd)
    finally:
        os.close(fd)
    with open(path, "rb") as handle:
        assert Grammar.from_file(handle, encoding="latin-1") == expected
        assert not handle.closed
    with open(path, encoding="latin-1") as handle:
        assert Grammar.from_file(handle) == expected
        assert not handle.closed
    with open(path, encoding="utf-8") as handle:
        with pytest.raises(GrammarError, match="g.cfg: cannot be decoded as utf-8"):
            Grammar.from_file(handle)
    assert Grammar.from_file(io.StringIO(EXAMPLE)) == Grammar.from_string(EXAMPLE)
    with pytest.raises(TypeError, match="file descriptor or a file object"):
        Grammar.from_file(3.5)
    with pytest.raises(TypeError, match="not a bool"):
        Grammar.from_file(True)


def test_symbols_and_words_are_compared_in_nfc():
    # the same grammar with its accented letters encoded both ways
    nfd = Grammar.from_string(f"S -> N{CAFE_NFD} E\nN{CAFE_NFD} -> '{CAFE_NFD}'\nE -> 'noir'")
    nfc = Grammar.from_string(f"S -> N{CAFE} E\nN{CAFE} -> '{CAFE}'\nE -> 'noir'")
    assert nfd == nfc
    assert nfd.terminals == (CAFE, "noir") and nfd.nonterminals == ("S", f"N{CAFE}", "E")
    built = Grammar(
        [Rule("S", (Symbol(CAFE_NFD, True),)), Rule("S", (Symbol(CAFE, True),))],
        start="S",
    )
    assert built.rules == (Rule("S", (Symbol(CAFE, True),)),)  # one rule, not two
    assert Grammar.normalize_words(f"{CAFE_NFD}  noir") == (CAFE, "noir")
    assert Grammar.normalize_words([CAFE_NFD, CAFE]) == (CAFE, CAFE)
    with pytest.raises(TypeError, match="word 1 is 3"):
        Grammar.normalize_words(["noir", 3])
    assert nfc.lexical_mask(CAFE_NFD) == nfc.lexical_mask(CAFE) != 0
    assert recognizes(nfc, [CAFE_NFD, "noir"]) and recognizes(nfd, [CAFE, "noir"])
    assert pickle.loads(pickle.dumps(nfd)) == nfc


# -- files as NLTK and editors write them ---------------------------------------------------


def test_nltk_file_conventions_bom_spaced_start_and_continued_lines():
    text = "\ufeff% start S\nS -> NP VP\nNP -> Det N | \\\n  'fish'\nVP -> 'swim'\n"
    text += "Det -> 'the'\nN -> 'fish'\n"
    g = Grammar.from_string(text, cnf="allow")
    assert g.start == "S" and "NP" in g.nonterminals
    assert sorted(str(r) for r in g.rules if r.lhs == "NP") == ["NP -> 'fish'", "NP -> Det N"]
    raw = text.encode("utf-8")  # the BOM as bytes, as a file read in binary holds it
    assert Grammar.from_string(raw, cnf="allow") == g
    with pytest.raises(GrammarError, match="line 5"):  # numbered as in the file
        Grammar.from_string("S -> A\nA -> 'a'\nB -> \\\n  'b'\nC 'c'", cnf="allow")


def test_nonterminals_without_rules_warn_and_say_where():
    with pytest.warns(GrammarWarning, match=r"line 2: V has no rules .*'VP -> V NP'"):
        Grammar.from_string("S -> NP VP\nVP -> V NP | 'swim'\nNP -> 'fish'", cnf="allow")
    with pytest.warns(GrammarWarning) as caught:
        Grammar.from_string("%start X\nS -> X X\nS -> 'a'", cnf="allow")
    assert [str(w.message)[:30] for w in caught] == [
        "the start symbol X has no rule",
        "line 2: X has no rules (undefi",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in Grammar.builtin_names():  # the shipped grammars define every symbol
            Grammar.builtin(name)


def test_a_grammars_warning_points_at_the_callers_line(tmp_path):
    """However deep in the package a GrammarWarning is raised (from_file through
    from_string, the CNF conversion inside a parse), it names the user's line."""
    path = tmp_path / "undefined.cfg"
    path.write_text("S -> A B\nA -> 'a'\n")
    for read in (lambda: Grammar.from_file(path), lambda: Grammar.from_string(path.read_text())):
        with pytest.warns(GrammarWarning, match="B has no rules") as caught:
            read()
        assert [w.filename for w in caught] == [__file__]


def test_a_file_named_like_a_builtin_is_not_silently_shadowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "G0").write_text("S -> 'mine'\n")
    with pytest.warns(GrammarWarning, match=r"built-in grammar G0, which is used.*\./G0"):
        assert Grammar.load("G0") == Grammar.builtin("G0")
    assert Grammar.load("./G0").terminals == ("mine",)


def test_from_nltk_refuses_a_feature_grammar_with_a_message():
    nltk = pytest.importorskip("nltk")
    text = "% start S\nS -> NP[NUM=?n] VP[NUM=?n]\nNP[NUM=sg] -> 'fish'\nVP[NUM=sg] -> 'swims'"
    fg = nltk.grammar.FeatureGrammar.fromstring(text)
    with pytest.raises(GrammarError, match="feature grammar"):
        Grammar.from_nltk(fg)
