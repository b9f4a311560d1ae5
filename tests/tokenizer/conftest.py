"""A SentencePiece model trained here on one line in each of 12 scripts."""

import pytest
import sentencepiece

# One line in each of 12 scripts.
SCRIPTS = {
    "Latin": "The library opens every morning at nine.",
    "Cyrillic": "Библиотека открывается каждое утро в девять.",
    "Greek": "Η βιβλιοθήκη ανοίγει κάθε πρωί στις εννέα.",
    "Arabic": "تفتح المكتبة كل صباح في الساعة التاسعة.",
    "Hebrew": "הספרייה נפתחת כל בוקר בשעה תשע.",
    "Devanagari": "पुस्तकालय हर सुबह नौ बजे खुलता है।",
    "Han": "图书馆每天早上九点开门。",
    "Japanese": "図書館は毎朝九時に開きます。",
    "Hangul": "도서관은 매일 아침 아홉 시에 문을 엽니다.",
    "Thai": "ห้องสมุดเปิดทุกเช้าเวลาเก้าโมง",
    "Georgian": "ბიბლიოთეკა ყოველ დილით ცხრა საათზე იხსნება.",
    "Armenian": "Գրադարանը բացվում է ամեն առավոտ ժամը ինը։",
}


def train_sentencepiece(root) -> str:
    """A small SentencePiece model (vocabulary ~400) over the 12 lines, in ``root``."""
    text = root / "text.txt"
    text.write_text("\n".join(list(SCRIPTS.values()) * 20), encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(root / "sp"),
        vocab_size=400,
        hard_vocab_limit=False,
        character_coverage=1.0,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        minloglevel=2,
    )
    return str(root / "sp.model")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_sentencepiece(tmp_path_factory.mktemp("sp"))
