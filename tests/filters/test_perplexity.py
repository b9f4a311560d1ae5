import random

import pytest

from ccnet_pipeline.samples.embedded import _Language
from filters.perplexity import (
    PERCENTILES,
    BucketConfig,
    LanguageModel,
    LanguageModels,
    ModelError,
    available_languages,
    bucket,
    format_cutoffs,
    load_kenlm,
    load_sentencepiece,
    read_cutoffs,
)

# Documents and the perplexity CCNet's own mine steps give them (cc_net/perplexity.py:
# MultiSentencePiece(normalize=True) then DocLM(normalize=False), CCNet at bda555b) with the
# lm_dir fixture's models; a text that normalizes to nothing gets no perplexity there either.
CCNET_PERPLEXITY = [
    (
        "en",
        "The village library opens every morning at nine.\nIt closes late on Thursdays, when volunteers read stories to children.\nOlder residents learn to use the computers there.",
        472.4,
    ),
    (
        "fr",
        "La bibliothèque du village ouvre chaque matin à neuf heures.\nElle ferme tard le jeudi, quand des bénévoles lisent des histoires aux enfants.\nLes anciens y apprennent l'informatique.",
        849.7,
    ),
    (
        "de",
        "Die Dorfbibliothek öffnet jeden Morgen um neun Uhr.\nDonnerstags schließt sie spät, wenn Freiwillige den Kindern vorlesen.\nÄltere Bewohner lernen dort den Computer.",
        1200.9,
    ),
    ("en", "Prices: 12,99 € — « cheap »\nCall 555-0199 now!!\n東京は２０２０年に…", 4292.6),
    ("en", "\x01\x02\n\x03", None),
]
# CCNet's tokenized field for the first document.
CCNET_TOKENIZED_EN = (
    "▁the ▁village ▁lib r ary ▁open s ▁every ▁morning ▁at ▁n ine . it ▁close s ▁late ▁on ▁ thur s day s , ▁when "
    "▁vol u n te ers ▁read ▁stor ies ▁to ▁children . ol d er ▁resident s ▁learn ▁to ▁use ▁the ▁comp ut ers ▁there ."
)


def held_out_text(language: str, seed: int, lines: int = 8) -> str:
    """New text from the same generator as the training text, with another seed."""
    generator = _Language(language, language, "en_US", random.Random(seed))
    return "\n".join(generator.paragraph() for _ in range(lines))


def shuffled(text: str, seed: int = 0) -> str:
    rng = random.Random(seed)
    lines = []
    for line in text.split("\n"):
        words = line.split()
        rng.shuffle(words)
        lines.append(" ".join(words))
    return "\n".join(lines)


def test_ccnet_layout(lm_dir):
    assert available_languages(str(lm_dir)) == ("de", "en", "fr")
    assert {p.name for p in lm_dir.iterdir()} >= {"en.sp.model", "en.arpa.bin", "en.train.json"}


@pytest.mark.parametrize("language, other", [("en", "fr"), ("fr", "de"), ("de", "en")])
def test_clean_text_scores_lower_than_shuffled_and_other_language(lm_dir, language, other):
    model = LanguageModel(str(lm_dir), language)
    for seed in range(5):
        text = held_out_text(language, seed=100 + seed)
        clean = model.perplexity(text, "lines")
        assert clean < model.perplexity(shuffled(text, seed), "lines")
        assert clean < model.perplexity(held_out_text(other, seed=200 + seed), "lines")
        # Scored as one sentence (the fixture models know only generated word salad, which
        # shuffling barely hurts), the other language still scores higher.
        assert model.perplexity(text) < model.perplexity(held_out_text(other, seed=200 + seed))


def test_per_line_perplexity_formula(lm_dir):
    """lines: 10 ** (-sum log10 p / sum (pieces + 1)) over lines, rounded to one decimal."""
    import kenlm
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(lm_dir / "en.sp.model"))
    lm = kenlm.Model(str(lm_dir / "en.arpa.bin"))
    lines = ["The house is big.", "We are going home, today!"]
    pieces = [sp.encode_as_pieces(line.lower()) for line in lines]
    expected = 10 ** (-sum(lm.score(" ".join(p)) for p in pieces) / sum(len(p) + 1 for p in pieces))
    assert LanguageModel(str(lm_dir), "en").perplexity("\n".join(lines), "lines") == round(expected, 1)


def test_ccnet_perplexity_scores_the_document_as_one_sentence(lm_dir):
    import kenlm
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(lm_dir / "en.sp.model"))
    lm = kenlm.Model(str(lm_dir / "en.arpa.bin"))
    pieces = sp.encode_as_pieces("the house is big.we are going home, today!")  # newline deleted
    expected = 10 ** (-lm.score(" ".join(pieces)) / (len(pieces) + 1))
    assert LanguageModel(str(lm_dir), "en").perplexity("The house is big.\nWe are going home, today!") == round(
        expected, 1
    )


@pytest.mark.parametrize("language, text, expected", CCNET_PERPLEXITY)
def test_ccnet_mode_gives_ccnets_perplexity(lm_dir, language, text, expected):
    assert LanguageModel(str(lm_dir), language).perplexity(text, "ccnet") == expected
    assert LanguageModels(str(lm_dir)).perplexity(text, language) == expected  # ccnet is the default


def test_ccnet_pieces_are_ccnets(lm_dir):
    import sentencepiece

    from filters.normalize import normalize_for_lm

    sp = sentencepiece.SentencePieceProcessor(model_file=str(lm_dir / "en.sp.model"))
    assert " ".join(sp.encode_as_pieces(normalize_for_lm(CCNET_PERPLEXITY[0][1]))) == CCNET_TOKENIZED_EN


def test_the_two_modes_differ_on_multi_line_text(lm_dir):
    models = LanguageModels(str(lm_dir), mode="lines")
    language, text, ccnet = CCNET_PERPLEXITY[0]
    assert models.perplexity(text, language) == 305.0 != ccnet
    with pytest.raises(ValueError, match="perplexity mode"):
        LanguageModels(str(lm_dir), mode="sentences")


def test_language_without_model_has_no_perplexity(lm_dir):
    models = LanguageModels(str(lm_dir))
    assert models.perplexity("some text", "sw") is None
    assert models.perplexity("some text", None) is None
    assert models.perplexity("some text", "en") > 0


def test_missing_and_corrupt_model_files_are_clear_errors(lm_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="language model folder not found"):
        LanguageModels(str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match="model file not found"):
        LanguageModel(str(tmp_path), "en").load()
    (tmp_path / "en.sp.model").write_bytes((lm_dir / "en.sp.model").read_bytes())
    (tmp_path / "en.arpa.bin").write_bytes(b"this is not a KenLM model")
    with pytest.raises(ValueError, match="cannot load KenLM model"):
        LanguageModel(str(tmp_path), "en").load()
    (tmp_path / "en.sp.model").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="cannot load SentencePiece model"):
        LanguageModel(str(tmp_path), "en").load()


@pytest.mark.parametrize(
    "name, content, says",
    [
        # bytes that are not UTF-8: KenLM reads them as ARPA text, and its error was "'utf-8' codec can't decode"
        (
            "en.arpa.bin",
            b"\xc1\xff\x00 not a model \xc1" * 50,
            "neither a KenLM binary (build_binary's) nor an ARPA file",
        ),
        ("en.arpa.bin", b"", "the file is empty"),
        ("en.arpa.bin", "cut", "Binary file has size 4096 but the headers say it should be at least"),
        ("en.arpa.bin", b"mmap lm http://kheafield.com/code format version 4\n\0" + bytes(200), "format version 4"),
        ("en.sp.model", "cut", "not a SentencePiece model (corrupt, cut short, or another kind of file)"),
        ("en.sp.model", b"", "the file is empty"),
    ],
)
def test_a_corrupt_model_names_the_file_and_what_is_wrong(lm_dir, tmp_path, capfd, name, content, says):
    for model in ("en.sp.model", "en.arpa.bin"):
        (tmp_path / model).write_bytes((lm_dir / model).read_bytes())
    broken = tmp_path / name
    broken.write_bytes(broken.read_bytes()[:4096] if content == "cut" else content)
    kind = "KenLM" if name.endswith(".arpa.bin") else "SentencePiece"
    with pytest.raises(ModelError) as error:
        LanguageModel(str(tmp_path), "en").load()
    assert str(error.value).startswith(f"cannot load {kind} model {broken}: ")
    assert says in str(error.value) and "\n" not in str(error.value) and ".cc:" not in str(error.value)
    assert "Reading" not in capfd.readouterr().err  # refused before KenLM reads it as ARPA, with a progress bar


def test_model_loaders_name_the_file(lm_dir, tmp_path):
    assert load_sentencepiece(str(lm_dir / "en.sp.model")).get_piece_size() > 0
    assert load_kenlm(str(lm_dir / "en.arpa.bin")).order == 5
    with pytest.raises(FileNotFoundError, match=f"KenLM model file not found: {tmp_path}/x.arpa.bin"):
        load_kenlm(str(tmp_path / "x.arpa.bin"))
    (tmp_path / "x.model").write_bytes(b"\x0a\xff" * 100)
    with pytest.raises(ModelError, match=f"cannot load SentencePiece model {tmp_path}/x.model: not a Sentence"):
        load_sentencepiece(str(tmp_path / "x.model"))


CUTOFFS = {"en": [float(10 * p) for p in PERCENTILES], "fr": [float(p) for p in PERCENTILES]}


@pytest.mark.parametrize(
    "perplexity, language, expected",
    [
        (250.0, "en", "head"),  # below the 30th percentile (300)
        (300.0, "en", "middle"),  # at the head cutoff: middle (CCNet: head only below it)
        (599.9, "en", "middle"),
        (600.0, "en", "tail"),  # at the tail cutoff: tail, as CCNet ("< tail" is middle)
        (29.9, "fr", "head"),
        (None, "en", "all"),  # no model for the language
        (50.0, "de", "all"),  # no cutoffs for the language
    ],
)
def test_bucket_on_known_cutoffs(perplexity, language, expected):
    assert bucket(perplexity, language, CUTOFFS, BucketConfig()) == expected


def test_bucket_percentiles_are_configurable():
    config = BucketConfig(head_percentile=10, tail_percentile=20)
    assert [bucket(v, "en", CUTOFFS, config) for v in (99.0, 150.0, 250.0)] == ["head", "middle", "tail"]
    with pytest.raises(ValueError):
        BucketConfig(head_percentile=70, tail_percentile=60)
    with pytest.raises(ValueError):
        BucketConfig(tail_percentile=100)  # cutoff.csv ends at 99


# Three columns (de, en, zh) of CCNet's real cc_net/data/cutoff.csv: percentiles 0..99, no row 100.
CCNET_CUTOFF_CSV = (
    ",de,en,zh\n"
    + "\n".join(
        [
            "0,0,0,10",
            "1,150,160,600",
            "2,170,180,750",
            "3,190,200,840",
            "4,200,210,900",
            "5,210,220,950",
            "6,220,230,990",
            "7,230,230,1030",
            "8,230,240,1060",
            "9,240,250,1090",
            "10,250,250,1110",
            "11,250,260,1140",
            "12,260,260,1160",
            "13,270,270,1180",
            "14,270,270,1200",
            "15,280,280,1220",
            "16,280,280,1240",
            "17,290,280,1260",
            "18,300,290,1270",
            "19,300,290,1290",
            "20,310,300,1310",
            "21,310,300,1320",
            "22,320,300,1340",
            "23,320,310,1350",
            "24,330,310,1370",
            "25,340,320,1380",
            "26,340,320,1400",
            "27,350,320,1410",
            "28,350,330,1430",
            "29,360,330,1440",
            "30,370,340,1460",
            "31,370,340,1470",
            "32,380,350,1490",
            "33,380,350,1500",
            "34,390,350,1520",
            "35,400,360,1530",
            "36,400,360,1540",
            "37,410,370,1560",
            "38,410,370,1570",
            "39,420,380,1590",
            "40,430,380,1610",
            "41,430,390,1620",
            "42,440,390,1640",
            "43,450,400,1650",
            "44,450,400,1670",
            "45,460,410,1690",
            "46,470,420,1700",
            "47,470,420,1720",
            "48,480,430,1740",
            "49,490,440,1750",
            "50,500,440,1770",
            "51,500,450,1790",
            "52,510,460,1810",
            "53,520,460,1830",
            "54,530,470,1840",
            "55,540,480,1860",
            "56,550,490,1880",
            "57,560,500,1900",
            "58,570,510,1920",
            "59,580,510,1940",
            "60,590,520,1950",
            "61,600,530,1970",
            "62,610,550,2000",
            "63,620,560,2020",
            "64,630,570,2040",
            "65,640,580,2060",
            "66,660,600,2090",
            "67,670,610,2120",
            "68,680,630,2140",
            "69,700,640,2170",
            "70,710,660,2200",
            "71,730,680,2230",
            "72,740,700,2260",
            "73,760,720,2290",
            "74,780,740,2320",
            "75,800,770,2350",
            "76,820,800,2390",
            "77,840,830,2420",
            "78,860,860,2460",
            "79,890,890,2500",
            "80,920,930,2540",
            "81,950,970,2590",
            "82,980,1010,2630",
            "83,1010,1060,2680",
            "84,1050,1110,2730",
            "85,1100,1170,2780",
            "86,1150,1230,2830",
            "87,1200,1300,2890",
            "88,1260,1380,2950",
            "89,1340,1460,3020",
            "90,1420,1570,3090",
            "91,1530,1700,3160",
            "92,1660,1860,3240",
            "93,1830,2060,3320",
            "94,2060,2270,3400",
            "95,2350,2520,3490",
            "96,2690,2750,3590",
            "97,3140,3260,3680",
            "98,3560,3460,3780",
            "99,3560,3590,3890",
        ]
    )
    + "\n"
)


def test_read_ccnets_real_cutoff_csv(tmp_path):
    path = tmp_path / "cutoff.csv"
    path.write_text(CCNET_CUTOFF_CSV)
    cutoffs = read_cutoffs(str(path))
    assert sorted(cutoffs) == ["de", "en", "zh"]
    assert all(len(values) == 100 for values in cutoffs.values())
    assert (cutoffs["en"][30], cutoffs["en"][60], cutoffs["zh"][99]) == (340.0, 520.0, 3890.0)
    config = BucketConfig()
    assert [bucket(v, "en", cutoffs, config) for v in (339.9, 340.0, 519.9, 520.0)] == [
        "head",
        "middle",
        "middle",
        "tail",
    ]
    written = tmp_path / "written.csv"
    written.write_text(format_cutoffs(cutoffs))
    assert written.read_text().splitlines()[0] == ",de,en,zh"
    assert [line.split(",")[0] for line in written.read_text().splitlines()[1:]] == [str(p) for p in range(100)]
    assert read_cutoffs(str(written)) == cutoffs


def test_a_cutoff_csv_with_row_100_still_reads(tmp_path):
    path = tmp_path / "cutoff.csv"
    rows = [",af,en"] + [f"{p},{100 + p}.5,{2 * p}" for p in range(101)]  # as earlier versions wrote
    path.write_text("\n".join(rows) + "\n")
    cutoffs = read_cutoffs(str(path))
    assert cutoffs["af"][30] == 130.5 and cutoffs["en"][60] == 120.0 and len(cutoffs["en"]) == 100


def test_malformed_cutoff_csv(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(",en\n0,1.0\n1,x\n")
    with pytest.raises(ValueError, match="bad.csv:3"):
        read_cutoffs(str(path))
    path.write_text(",en\n" + "".join(f"{p},{p}\n" for p in range(50)))
    with pytest.raises(ValueError, match="missing"):
        read_cutoffs(str(path))
    with pytest.raises(FileNotFoundError):
        read_cutoffs(str(tmp_path / "absent.csv"))
